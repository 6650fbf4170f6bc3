import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { FakeSite } from '../fakes/site.fake.js';
import type { Harness } from '../support/harness.js';
import { transcriptionWorld, type TranscriptionWorld } from '../support/world.js';
import { SCREENSHOTS, expectBrowserProblem, launchBrowser } from '../support/browser.js';
import { serveLibrary } from '../support/media-library.js';
import { waitFor } from '../support/wait-for.js';
import { OPERATOR } from '../../src/modules/principal.js';
import { type ErrorBody, jobBody } from '../support/bodies.js';

describe('the account area in a real browser (login link)', () => {
  let h: Harness;
  let site: FakeSite;
  let browser: Browser;
  let page: Page;
  let accountId: string;
  let key: string;
  let world: TranscriptionWorld;

  beforeAll(async () => {
    world = await transcriptionWorld({
      media: [{ path: '/talk.mp3', seconds: 75 }],
      pages: { '/empty': { title: 'Nothing here', body: '<p>text only</p>' } },
      env: { PUBLIC_URL: 'http://127.0.0.1:1' },
    });
    ({ h, site } = world);
    await serveLibrary(site);
    site.page(
      '/watch',
      `<html><head><title>Harbour</title><meta property="og:title" content="Harbour at dawn"><meta property="og:image" content="${site.origin}/media/cover.jpg"></head>
       <body><video><source src="${site.origin}/media/av-720.mp4" type='video/mp4; codecs="avc1.42c01f, mp4a.40.2"'></video></body></html>`,
    );
    // Media whose download never finishes: the job runs until it is canceled.
    site.endless('/endless.mp3', 'audio/mpeg');
    ({ accountId, key } = await h.account({ credits: 25 }));
    browser = await launchBrowser();
    // A phone-width screen: the page must read there too.
    page = await browser.newPage({ viewport: { width: 390, height: 844 }, acceptDownloads: true });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await world?.close();
  });

  const shot = (name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });

  it('signs in with a one-time link, shows the balance, and the link cannot be used again', async () => {
    const link = await h.services.sessions.createLoginLink(OPERATOR, accountId);
    const url = new URL(link.url);
    await page.goto(`${h.url}/account/${url.hash}`);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(await page.getByTestId('available').textContent()).toBe('25 credits');
    expect(await page.getByTestId('membership').textContent()).toMatch(/^Active until /);
    // The link left the address bar; the session is an HttpOnly cookie the page cannot read.
    expect(new URL(page.url()).hash).toBe('');
    expect(await page.evaluate('document.cookie')).toBe('');
    // Chromium keeps the __Host- cookie (Secure) over plain http from this machine, a secure context.
    const cookies = await page.context().cookies();
    expect(cookies.map((c) => c.name)).toEqual(['__Host-mg_session']);
    expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: 'Strict', secure: true, path: '/', domain: '127.0.0.1' });
    // Strict security headers on the page.
    const res = await page.request.get(`${h.url}/account/`);
    expect(res.headers()['content-security-policy']).toContain("script-src 'self'");
    expect(res.headers()['x-frame-options']).toBeDefined();
    await shot('overview');
    // The page's icon is its own, under its policy: no request of the page fails (browser.ts checks every test).
    const icon = await page.request.get(new URL((await page.locator('link[rel="icon"]').getAttribute('href'))!, page.url()).toString());
    expect([icon.status(), icon.headers()['content-type']]).toEqual([200, 'image/svg+xml']);
    // A second browser with the same link is refused in words; the refusal is the one failed request.
    // The page asks what the link would sign in before spending it: a spent link is refused there.
    expectBrowserProblem(/^answered 401: POST .*\/account\/api\/login-link \(fetch\)$/);
    expectBrowserProblem(
      /^console error: Failed to load resource: the server responded with a status of 401 .*\/account\/api\/login-link\)$/,
    );
    const other = await browser.newPage();
    await other.goto(`${h.url}/account/${url.hash}`);
    await other.getByRole('alert').waitFor();
    expect(await other.getByRole('alert').textContent()).toMatch(/used or has expired/);
    await other.close();
  });

  it('creates a key whose secret works once shown, and revoking it stops it at the next call', async () => {
    await page.getByRole('heading', { name: 'API Keys' }).scrollIntoViewIfNeeded();
    await page.getByLabel('Name').fill('from the browser');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByTestId('new-key').textContent())!;
    expect(secret).toMatch(/^mg_live_/);
    expect(await page.getByText('it will not be shown again').count()).toBe(1);
    await shot('keys-created');
    const call = () =>
      fetch(`${h.url}/api/parse`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body: JSON.stringify({ url: `${site.origin}/watch` }),
      });
    expect((await call()).status).toBe(200);
    await page.getByRole('button', { name: 'Done' }).click();
    const row = page.locator('tr', { hasText: 'from the browser' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Yes, revoke' }).click();
    await row.getByText(/^Revoked /).waitFor();
    const after = await call();
    expect(after.status).toBe(401);
    expect(((await after.json()) as { error: { code: string } }).error.code).toBe('UNAUTHENTICATED');
    await shot('keys-revoked');
  });

  it('runs a parse from the form and shows the result with its cover', async () => {
    await page.getByLabel('Page URL').fill(`${site.origin}/watch`);
    await page.getByRole('button', { name: 'Parse', exact: true }).click();
    const result = page.getByTestId('parse-result');
    await result.waitFor();
    expect(await result.getByRole('heading').textContent()).toBe('Harbour at dawn');
    expect(await result.getByRole('link').textContent()).toBe(`${site.origin}/media/av-720.mp4`);
    const cover = result.getByRole('img');
    await cover.waitFor();
    expect(await cover.evaluate((img: { complete: boolean; naturalWidth: number }) => img.complete && img.naturalWidth > 0)).toBe(true);
    await shot('try-parse');
    // An error is shown in the contract's words, not as JSON or a stack.
    await page.getByLabel('Page URL').fill('http://127.0.0.1:9/private');
    await page.getByRole('button', { name: 'Parse', exact: true }).click();
    const alert = page.locator('#try [role="alert"]');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/^The URL is not allowed/);
    await shot('try-error');
  });

  it('reads the credit history per task: what each charged (a failed or canceled one nothing), its ledger entries one click away', async () => {
    // Real tasks: a transcription from the form, and through the API a failed parse, a failed transcription, a canceled one.
    await page.getByLabel('Media URL').fill(`${site.origin}/talk.mp3`);
    await page.getByRole('button', { name: 'Transcribe', exact: true }).click();
    await page.getByTestId('transcript-result').waitFor();
    expect(
      await page
        .getByTestId('transcript-result')
        .getByText(/^Charged 2 credits; 21 credits left\.$/)
        .count(),
    ).toBe(1);
    const auth = { authorization: `Bearer ${key}` };
    expect((await h.rest('/api/parse', { url: `${site.origin}/empty` }, key)).json<ErrorBody>().error.code).toBe('NO_MEDIA_FOUND');
    expect((await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/gone.mp3` }, key)).json<ErrorBody>().error.code).toBe(
      'CONTENT_UNAVAILABLE',
    );
    const started = jobBody(await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/endless.mp3` }, key, { prefer: 'respond-async' }));
    await waitFor(
      async () => {
        const job = jobBody(await h.request('GET', `/api/jobs/${started.id}`, { headers: auth }));
        if (job.status !== 'RUNNING') throw new Error(`the job is ${job.status}`);
        return true;
      },
      { describe: 'the endless job to run', timeout: 15_000, interval: 100 },
    );
    expect(jobBody(await h.request('POST', `/api/jobs/${started.id}/cancel`, { headers: auth })).status).toBe('CANCELED');
    expect(await h.balance(accountId)).toEqual({ available: 21, held: 0 });

    await page.reload();
    const rows = page.locator('#usage table.history > tbody > tr[data-row]');
    await rows.first().waitFor();
    const cells = async (row: import('playwright-core').Locator) => (await row.locator('td').allTextContents()).slice(1, 4);
    // Newest first: one row per task, and the operator's grant as its own row.
    expect(await Promise.all((await rows.all()).map(cells))).toEqual([
      ['Transcribe', 'free: canceled', 'Canceled'],
      ['Transcribe', 'free: failed', 'Failed'],
      ['Parse', 'free: failed', 'Failed'],
      ['Transcribe', '−2', 'Succeeded'],
      ['Parse', '−1', 'Succeeded'],
      ['Parse', '−1', 'Succeeded'],
      ['Grant · initial credits', '+25', ''],
    ]);
    // The raw entries, one click away.
    const transcription = rows.nth(3);
    const toggle = transcription.getByRole('button', { name: 'Entries' });
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    await toggle.click();
    const raw = page.locator(`#${await toggle.getAttribute('aria-controls')}`);
    await raw.waitFor();
    const entries = async (table: import('playwright-core').Locator) =>
      Promise.all((await table.locator('tbody tr').all()).map(async (r) => (await r.locator('td').allTextContents()).slice(0, 4)));
    expect(await entries(raw)).toEqual([
      ['HOLD', '1', '−1', '+1'],
      ['HOLD', '1', '−1', '+1'],
      ['CAPTURE', '2', '0', '−2'],
    ]);
    expect(await transcription.getByRole('button', { name: 'Hide entries' }).getAttribute('aria-expanded')).toBe('true');
    await shot('history-per-task');
    await rows.nth(1).getByRole('button', { name: 'Entries' }).click();
    expect(await entries(page.locator(`#${await rows.nth(1).getByRole('button').getAttribute('aria-controls')}`))).toEqual([
      ['HOLD', '1', '−1', '+1'],
      ['RELEASE', '1', '+1', '−1'],
    ]);
    await transcription.getByRole('button', { name: 'Hide entries' }).click();
    expect(await raw.count()).toBe(0);
    // A grant has no task behind it: nothing to open.
    expect(await rows.nth(6).getByRole('button').count()).toBe(0);
  });

  it('shows usage and history, and downloads the history as CSV', async () => {
    await page.reload();
    await page.getByRole('heading', { name: 'Usage' }).scrollIntoViewIfNeeded();
    await page.locator('.chart canvas').waitFor();
    expect(await page.locator('#usage tbody tr').count()).toBeGreaterThan(0);
    await shot('usage');
    // The same page on a desktop screen (the README shows it).
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({ path: join(SCREENSHOTS, 'desktop.png') });
    await page.setViewportSize({ width: 390, height: 844 });
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
    const csv = readFileSync((await download.path())!, 'utf8');
    expect(csv.split('\n')[0]).toMatch(/^id,created_at,account_id,kind,amount/);
    expect(csv).toContain('CAPTURE');
  });

  it('parses the sound of a video: the gateway’s stream, with a player for it', async () => {
    await page.getByLabel('Page URL').fill(`${site.origin}/watch`);
    const result = page.getByTestId('parse-result');
    // The sound of a video with sound: made by the gateway, a stream URL with a player for it.
    await page.getByLabel('Mode').selectOption('audio');
    await page.getByLabel('Audio file').selectOption('mp3');
    await page.getByRole('button', { name: 'Parse', exact: true }).click();
    await result.getByText(/^streamed by the gateway until /).waitFor();
    const player = result.getByTestId('stream-player');
    expect(await player.evaluate((el: { tagName: string }) => el.tagName)).toBe('AUDIO');
    expect(new URL((await player.getAttribute('src'))!).pathname).toMatch(/^\/api\/streams\/[A-Za-z0-9_-]+$/);
    await shot('try-parse-stream');
    await page.getByLabel('Mode').selectOption('auto');
  });

  it('asks before a login link switches accounts: staying keeps the session and the link, switching ends the old session', async () => {
    const before = (await page.context().cookies()).find((c) => c.name === '__Host-mg_session')!;
    const bea = await h.services.accounts.create(OPERATOR, { name: 'Bea', credits: 3 });
    const link = new URL((await h.services.sessions.createLoginLink(OPERATOR, bea.id)).url);
    const question = page.getByText('You are signed in as Test account. Sign in as Bea instead?');

    // Opened in the tab that shows the account: only the fragment changes.
    await page.goto(`${h.url}/account/${link.hash}`);
    await question.waitFor();
    expect(new URL(page.url()).hash).toBe('');
    await shot('switch-question');
    await page.getByRole('button', { name: 'Stay signed in as Test account' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Test account');
    expect((await page.context().cookies()).find((c) => c.name === '__Host-mg_session')!.value).toBe(before.value);
    expect((await h.sql<{ used_at: unknown }>(`select used_at from login_link where account_id = ?`, [bea.id]))[0].used_at).toBeNull();

    // The same link, unspent, once more: this time switch.
    await page.goto(`${h.url}/account/${link.hash}`);
    await question.waitFor();
    await page.getByRole('button', { name: 'Sign in as Bea' }).click();
    await page.getByRole('heading', { name: 'Bea', level: 1 }).waitFor();
    expect(await page.getByTestId('available').textContent()).toBe('3 credits');
    const after = (await page.context().cookies()).find((c) => c.name === '__Host-mg_session')!;
    expect(after.value).not.toBe(before.value);
    // The first account's session is over on the server, wherever its cookie was copied.
    const replay = await fetch(`${h.url}/account/api/session`, { headers: { cookie: `__Host-mg_session=${before.value}` } });
    expect(replay.status).toBe(204);
    const replayMe = await fetch(`${h.url}/graphql?query=${encodeURIComponent('{ me { id } }')}`, {
      headers: { cookie: `__Host-mg_session=${before.value}` },
    });
    expect(((await replayMe.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect(
      (
        await h.sql<{ n: number }>(`select count(*)::int as n from account_session where account_id = ? and revoked_at is null`, [
          accountId,
        ])
      )[0].n,
    ).toBe(0);
  });

  it('signs out: the session ends on the server and the old cookie opens nothing', async () => {
    const cookie = (await page.context().cookies()).find((c) => c.name === '__Host-mg_session')!;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to your mediagate account' }).waitFor();
    const replay = await fetch(`${h.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: `__Host-mg_session=${cookie.value}` },
      body: JSON.stringify({ query: '{ me { id } }' }),
    });
    expect(replay.status).toBe(401);
    await shot('signed-out');
  });
});
