import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../support/browser.js';
import { createHarness, type Harness } from '../support/harness.js';

const SHOTS = join(process.cwd(), 'test-results', 'reference-pages');

/**
 * /docs and the GraphQL landing page in a real browser, cut off from everything but the gateway:
 * they must render under their Content Security Policy with no request to another origin.
 */
describe('the reference pages in a browser, offline', () => {
  let h: Harness;
  let browser: Browser;
  let page: Page;
  const elsewhere: string[] = [];

  beforeAll(async () => {
    h = await createHarness();
    browser = await launchBrowser();
    mkdirSync(SHOTS, { recursive: true });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // Offline: anything not asked of the gateway fails, and is noted.
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${h.url}/`) || url.startsWith('data:')) return route.continue();
      elsewhere.push(url);
      return route.abort('internetdisconnected');
    });
    // Every refusal of the policy is recorded where the test can read it.
    await context.addInitScript({
      content: `window.cspViolations = [];
        document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sourceFile + ':' + e.lineNumber));`,
    });
    page = await context.newPage();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  const violations = () => page.evaluate('window.cspViolations') as Promise<string[]>;

  it('/docs renders every route, its error examples, and tries a call on this origin', async () => {
    await page.goto(`${h.url}/docs/`);
    await page.getByRole('heading', { name: /mediagate REST API/ }).waitFor();
    for (const path of [
      '/api/parse',
      '/api/transcribe',
      '/api/jobs/{id}',
      '/api/transcriptions/{file}',
      '/api/credit-history.csv',
      '/healthz',
    ]) {
      await page
        .locator('.opblock-summary-path', { hasText: new RegExp(`^${path.replace(/[.{}]/g, '\\$&')}$`) })
        .first()
        .waitFor();
    }
    // An operation's 402 shows the contract's error body.
    await page.locator('#operations-media-parse').click();
    const insufficient = page.locator('#operations-media-parse tr.response[data-code="402"]');
    await insufficient.waitFor();
    expect(await insufficient.textContent()).toContain('INSUFFICIENT_CREDITS');
    await page.screenshot({ path: join(SHOTS, 'docs.png') });
    // "Try it out" reaches the gateway that serves the page.
    const health = page.locator('#operations-operators-health');
    await health.click();
    await health.getByRole('button', { name: 'Try it out' }).click();
    await health.getByRole('button', { name: 'Execute' }).click();
    await health.locator('.live-responses-table .response-col_status', { hasText: '200' }).waitFor();
    expect(await violations()).toEqual([]);
    expect(elsewhere).toEqual([]);
  });

  it('the GraphQL landing page renders offline with its schema', async () => {
    await page.goto(`${h.url}/graphql`);
    await page.getByRole('heading', { name: 'mediagate GraphQL' }).waitFor();
    expect(await page.locator('pre').last().textContent()).toContain('type Mutation {');
    // The page's own stylesheet is allowed by its hash.
    expect(await page.evaluate('getComputedStyle(document.body).maxWidth')).not.toBe('none');
    await page.screenshot({ path: join(SHOTS, 'graphql-landing.png') });
    expect(await violations()).toEqual([]);
    expect(elsewhere).toEqual([]);
  });
});
