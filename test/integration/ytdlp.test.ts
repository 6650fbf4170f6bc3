import { createHarness, type Harness } from '../support/harness.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { makeMedia } from '../support/media.js';
import { fetchStream, probeBytes } from '../support/streams.js';
import { TEST_PEPPER } from '../support/harness.js';
import { StreamTokens } from '../../src/modules/streams/stream-token.js';

/** The source a stream URL stands for (tests hold the gateway's pepper). */
const sourceOf = (url: string) => new StreamTokens(TEST_PEPPER).open(new URL(url).pathname.replace('/api/streams/', ''))?.sources[0].url;
import { type ParseBody, type ErrorBody, parseBody } from '../support/bodies.js';

/** The real yt-dlp program, made to fetch through the guarded proxy. */
describe('parse through yt-dlp', () => {
  let h: Harness;
  let site: FakeSite;
  let target: FakeSite;
  beforeAll(async () => {
    site = await startFakeSite();
    target = await startFakeSite();
    site.file('/clip.mp4', makeMedia({ seconds: 2, video: true }), 'video/mp4');
    site.file('/a.mp4', makeMedia({ seconds: 1, video: true }), 'video/mp4');
    site.file('/b.mp4', makeMedia({ seconds: 1, video: true, audio: false }), 'video/mp4');
    site.file('/c.mp4', makeMedia({ seconds: 1, video: true }), 'video/mp4');
    site.page(
      '/gallery',
      `<html><head><title>Three clips</title></head>
      <body><video src="/a.mp4"></video><video src="/b.mp4"></video><video src="/c.mp4"></video></body></html>`,
    );
    site.page(
      '/watch',
      `<html><head><title>Skate</title><meta property="og:title" content="Skate session"></head>
      <body><video src="/clip.mp4" width="160" height="120"></video></body></html>`,
    );
    target.page('/secret', '<html><body><video src="/s.mp4"></video></body></html>');
    site.route('/hop', (_req, res) => void res.writeHead(302, { location: `${target.origin}/secret` }).end());
    h = await createHarness({ PARSE_PROVIDERS: 'ytdlp', FETCH_ALLOW_HOSTS: site.hostPort, PARSE_MAX_ITEMS: '2' });
  });
  afterAll(async () => {
    await h.close();
    await site.close();
    await target.close();
  });

  it('resolves a page with yt-dlp’s extractors and maps its formats and metadata; the Referer it reports is sent by the gateway’s stream', async () => {
    const { key } = await h.account();
    const res = await h.rest('/api/parse', { url: `${site.origin}/watch` }, key);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      provider: 'ytdlp',
      media: { kind: 'video', container: 'mp4', delivery: 'stream', headers: null },
      metadata: { title: expect.stringContaining('Skate session'), site: site.hostPort },
    });
    expect(sourceOf(res.json<ParseBody>().media.url)).toBe(`${site.origin}/clip.mp4`);
    const got = await fetchStream(h, res.json<ParseBody>().media.url);
    expect(got.status).toBe(200);
    expect(
      probeBytes(got.bytes, 'mp4')
        .streams.map((s) => s.type)
        .sort(),
    ).toEqual(['audio', 'video']);
    // The headers reached the site: the stream was asked for as the page's player would.
    expect(site.hits.filter((hit) => hit === 'GET /clip.mp4').length).toBeGreaterThan(0);
  });

  it('keeps yt-dlp behind the same rules: a redirect to a private address is refused and never reached', async () => {
    const { key, accountId } = await h.account({ credits: 2 });
    const before = target.connections;
    const res = await h.rest('/api/parse', { url: `${site.origin}/hop` }, key);
    expect(res.statusCode).toBe(422);
    expect(res.json<ErrorBody>().error.code).toBe('URL_NOT_ALLOWED');
    expect(target.connections).toBe(before);
    expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
  });

  it('turns a playlist (several videos on one page) into items, capped at PARSE_MAX_ITEMS with the rest counted', async () => {
    const a = await h.account({ credits: 3 });
    const rest = await h.rest('/api/parse', { url: `${site.origin}/gallery` }, a.key);
    expect(rest.statusCode).toBe(200);
    const body = parseBody(rest);
    expect(sourceOf(body.media.url)).toBe(`${site.origin}/a.mp4`);
    expect(body.items.map((i: { url: string }) => sourceOf(i.url))).toEqual([`${site.origin}/a.mp4`, `${site.origin}/b.mp4`]);
    expect(body.itemsTotal).toBe(3);
    expect(body.items[0]).toMatchObject({ kind: 'video', title: expect.any(String), alternatives: [] });
    expect(body.credits).toEqual({ charged: 1, balance: 2 });
    const b = await h.account({ credits: 3 });
    const gql = await h.gql<{ parse: ParseBody }>(
      `mutation($input: ParseInput!) { parse(input: $input) { media { url } items { url kind title } itemsTotal credits { charged } } }`,
      { input: { url: `${site.origin}/gallery` } },
      b.key,
    );
    expect(gql.errors).toBeUndefined();
    expect(gql.data.parse).toMatchObject({ itemsTotal: 3, credits: { charged: 1 } });
    expect(sourceOf(gql.data.parse.media.url)).toBe(`${site.origin}/a.mp4`);
    expect(gql.data.parse.items.map((i: { url: string }) => sourceOf(i.url))).toEqual(
      body.items.map((i: { url: string }) => sourceOf(i.url)),
    );
  });

  it('says NO_MEDIA_FOUND for a page yt-dlp finds nothing on', async () => {
    site.page('/empty', '<html><head><title>Nothing</title></head><body>text</body></html>');
    const { key } = await h.account();
    const res = await h.rest('/api/parse', { url: `${site.origin}/empty` }, key);
    expect(res.statusCode).toBe(422);
    expect(res.json<ErrorBody>().error.code).toBe('NO_MEDIA_FOUND');
  });
});
