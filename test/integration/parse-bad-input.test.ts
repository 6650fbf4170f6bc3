import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, type Harness } from '../support/harness.js';
import { serveLibrary } from '../support/media-library.js';
import type { ErrorBody, ParseBody } from '../support/bodies.js';

/**
 * Hostile and broken media behind a page: each gets the contract's error (or, for a probe, a
 * parse without the probed facts), the hold released, and no upstream text in the answer.
 */
describe('parse: bad manifests and probes', () => {
  let h: Harness;
  let site: FakeSite;
  const stalled: Array<() => void> = [];

  beforeAll(async () => {
    site = await startFakeSite();
    await serveLibrary(site);
    const o = site.origin;
    // Served as HLS, but an error page with an upstream's own words in it.
    site.file('/broken/master.m3u8', Buffer.from('<html><body>upstream-secret-text: 500</body></html>'), 'application/vnd.apple.mpegurl');
    site.page('/p/broken', `<html><body><video><source src="${o}/broken/master.m3u8" type="application/x-mpegURL"></video></body></html>`);
    // A master whose variants lead to private and loopback addresses nobody allowed.
    site.file(
      '/private/master.m3u8',
      Buffer.from(
        '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=1280x720,CODECS="avc1.42c01f,mp4a.40.2"\nhttp://10.0.0.7/v/720.m3u8\n' +
          '#EXT-X-STREAM-INF:BANDWIDTH=400000,RESOLUTION=854x480,CODECS="avc1.42c016,mp4a.40.2"\nhttp://127.0.0.1:9/v/480.m3u8\n',
      ),
      'application/vnd.apple.mpegurl',
    );
    // Over the manifest cap (MANIFEST_MAX_BYTES=4096 below), directly and named by a page.
    const big = `#EXTM3U\n${'#EXT-X-COMMENT padding padding padding padding padding\n'.repeat(200)}#EXT-X-STREAM-INF:BANDWIDTH=1,RESOLUTION=1280x720\n${o}/hls/muxed/720p/index.m3u8\n`;
    site.file('/big/master.m3u8', Buffer.from(big), 'application/vnd.apple.mpegurl');
    site.page('/p/big', `<html><body><video src="${o}/big/master.m3u8"></video></body></html>`);
    // Media whose server sends headers and a few bytes, then nothing.
    site.route('/stall/clip', (_req, res) => {
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': '1000000' });
      res.write(Buffer.alloc(64));
      stalled.push(() => res.destroy());
    });
    // A page whose playlist never answers at all.
    site.route('/slow/master.m3u8', (_req, res) => void stalled.push(() => res.destroy()));
    site.page('/p/slow', `<html><body><video><source src="${o}/slow/master.m3u8" type="application/x-mpegURL"></video></body></html>`);
    h = await createHarness({
      FETCH_ALLOW_HOSTS: site.hostPort,
      MANIFEST_MAX_BYTES: '4096',
      PROBE_TIMEOUT_SECONDS: '1',
      PARSE_TIMEOUT_SECONDS: '3',
    });
  }, 60_000);
  afterAll(async () => {
    for (const end of stalled) end();
    await h.close();
    await site.close();
  });

  /** Sends the request through REST and GraphQL, each on its own account with 2 credits. */
  async function both(input: Record<string, string>) {
    const a = await h.account({ credits: 2 });
    const b = await h.account({ credits: 2 });
    // Both doors at once: a deadline is waited out once.
    const [rest, gql] = await Promise.all([
      h.rest('/api/parse', input, a.key),
      h.gql<{ parse: unknown }>(
        `mutation($input: ParseInput!) { parse(input: $input) { media { url height durationSeconds hasAudio } credits { charged } } }`,
        { input },
        b.key,
      ),
    ]);
    return { rest, gql, accounts: [a, b] };
  }

  async function expectRefused(input: Record<string, string>, status: number, code: string, message?: RegExp) {
    const { rest, gql, accounts } = await both(input);
    expect(rest.statusCode).toBe(status);
    expect(rest.json<ErrorBody>().error.code).toBe(code);
    if (message) expect(rest.json<ErrorBody>().error.message).toMatch(message);
    expect(rest.body).not.toContain('upstream-secret-text');
    expect(gql.errors?.[0].extensions.code).toBe(code);
    expect(JSON.stringify(gql.errors)).not.toContain('upstream-secret-text');
    for (const acc of accounts) {
      expect(await h.balance(acc.accountId)).toEqual({ available: 2, held: 0 });
      expect(await h.ledgerSums(acc.accountId)).toEqual({ available: 2, held: 0 });
    }
  }

  it('a playlist that is not a playlist: 422 NO_MEDIA_FOUND, directly or named by a page', async () => {
    await expectRefused({ url: `${site.origin}/broken/master.m3u8` }, 422, 'NO_MEDIA_FOUND', /neither HLS nor DASH/);
    await expectRefused({ url: `${site.origin}/p/broken` }, 422, 'NO_MEDIA_FOUND', /neither HLS nor DASH/);
  });

  it('a playlist whose variants lead to private addresses: 422 URL_NOT_ALLOWED', async () => {
    await expectRefused({ url: `${site.origin}/private/master.m3u8` }, 422, 'URL_NOT_ALLOWED');
  });

  it('a manifest over the size cap: 422 NO_MEDIA_FOUND saying so, directly or named by a page', async () => {
    await expectRefused({ url: `${site.origin}/big/master.m3u8` }, 422, 'NO_MEDIA_FOUND', /larger than the 4096 bytes/);
    await expectRefused({ url: `${site.origin}/p/big` }, 422, 'NO_MEDIA_FOUND', /larger than the 4096 bytes/);
  });

  it('a probe that hangs is cut at its own limit: the parse succeeds without the facts, and "mute" finds nothing silent', async () => {
    const started = Date.now();
    const { rest, gql } = await both({ url: `${site.origin}/stall/clip` });
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(rest.statusCode).toBe(200);
    expect(rest.json<ParseBody>().media).toMatchObject({ height: null, durationSeconds: null, hasAudio: null });
    expect(rest.json<ParseBody>().credits.charged).toBe(1);
    expect(gql.data.parse).toEqual({
      media: { url: `${site.origin}/stall/clip`, height: null, durationSeconds: null, hasAudio: null },
      credits: { charged: 1 },
    });
    await expectRefused({ url: `${site.origin}/stall/clip`, mode: 'mute' }, 422, 'NO_MEDIA_FOUND', /No silent format exists/);
  });

  it('a playlist that never answers: 504 PROVIDER_TIMEOUT at the parse deadline', async () => {
    await expectRefused({ url: `${site.origin}/p/slow` }, 504, 'PROVIDER_TIMEOUT');
  });
});
