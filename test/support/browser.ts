import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (installed by .ci/run); the tests drive it with playwright-core, no browser download. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Where the browser tests write a screenshot of each section. */
export const SCREENSHOTS = join(process.cwd(), 'test-results', 'account-ui');

/** Launches the browser, or fails with what to install: a browser test is never skipped silently. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`No browser at ${CHROMIUM}: install Debian's chromium (apt-get install chromium), as .ci/run does, or set CHROMIUM_PATH.`);
  }
  mkdirSync(SCREENSHOTS, { recursive: true });
  // As root and on a closed network: no sandbox, and none of Chromium's own background traffic.
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
