import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';

/** Debian's Chromium (installed by .ci/run); the tests drive it with playwright-core, no browser download. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Where the browser tests write a screenshot of each section. */
export const SCREENSHOTS = join(process.cwd(), 'test-results', 'account-ui');

/** Launches the browser, or fails with what to install: a browser test is never skipped silently. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `No browser at ${CHROMIUM}: install Debian's chromium (apt-get install chromium), as .ci/run does, or set CHROMIUM_PATH.`,
    );
  }
  mkdirSync(SCREENSHOTS, { recursive: true });
  // As root and on a closed network: no sandbox, and none of Chromium's own background traffic.
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  // Every page of every context (browser.newPage makes one too) is watched from its first request.
  browser.on('context', watch);
  return browser;
}

/**
 * What a working page never shows: a console error (a resource answered 404, a script threw, the
 * Content Security Policy refused something), an uncaught exception, a request that failed, or
 * an answer of 400 or more. Each test of a file that drives a browser fails when its pages showed one.
 */
const problems: string[] = [];
/** The problems the running test provokes on purpose (a spent sign-in link's 401): each must happen. */
let expected: { pattern: RegExp; seen: boolean }[] = [];

/** Declares a problem the running test provokes on purpose; the test fails if it does not happen, or if anything else does. */
export function expectBrowserProblem(pattern: RegExp): void {
  expected.push({ pattern, seen: false });
}

function watch(context: BrowserContext): void {
  context.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()} (${msg.location().url || msg.page()?.url()})`);
  });
  context.on('weberror', (e) => problems.push(`uncaught exception: ${e.error().message} (${e.page()?.url()})`));
  context.on('requestfailed', (r) => problems.push(`request failed: ${r.method()} ${r.url()} (${r.failure()?.errorText})`));
  context.on('response', (r) => {
    if (r.status() >= 400) problems.push(`answered ${r.status()}: ${r.request().method()} ${r.url()} (${r.request().resourceType()})`);
  });
}

afterEach(() => {
  const unexpected = problems.filter((p) => {
    const match = expected.find((e) => e.pattern.test(p));
    if (match) match.seen = true;
    return !match;
  });
  const missing = expected.filter((e) => !e.seen).map((e) => `expected but not seen: ${e.pattern}`);
  problems.length = 0;
  expected = [];
  if (unexpected.length || missing.length) throw new Error(`The browser reported:\n${[...unexpected, ...missing].join('\n')}`);
});
