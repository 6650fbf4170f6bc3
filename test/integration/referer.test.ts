import { readFileSync } from 'node:fs';
import { startFakeSite, serveBytes, type FakeSite } from '../fakes/site.fake.js';
import { type ErrorBody, type ParseBody, parseBody } from '../support/bodies.js';
import { createHarness, type Harness } from '../support/harness.js';
import { mediaLibrary } from '../support/media-library.js';
import { fetchStream, probeBytes } from '../support/streams.js';

/**
 * Hotlink protection, as CDNs do it: the media answers only a request whose Referer is a page of
 * its own site (403 otherwise). A caller handed such a URL could not fetch it; the page's own player
 * sends the Referer, so the gateway reads it so (a file's facts in process or with ffprobe, a
 * manifest, its variants and segments) once the URL has refused it as a caller would ask, and hands
 * the caller a stream that sends it. Media that needs no Referer stays direct (the other parse
 * tests). Through both doors.
 */
describe('media that answers only with its page as Referer', () => {
  let h: Harness;
  let site: FakeSite;
  const refused: string[] = [];

  beforeAll(async () => {
    site = await startFakeSite();
    const library = await mediaLibrary();
    for (const [path, file] of Object.entries(library.files)) {
      const bytes = readFileSync(file.path);
      site.route(`/guarded${path}`, (req, res) => {
        const referer = req.headers.referer ?? '';
        if (!referer.startsWith(`${site.origin}/p/`)) {
          refused.push(`${path} ${referer || '(no Referer)'}`);
          return void res.writeHead(403, { 'content-type': 'text/plain' }).end('hotlinking is not allowed');
        }
        serveBytes(req, res, bytes, file.contentType);
      });
    }
    // Sizes and sound stated nowhere on the pages: only reading the media tells them.
    site.page('/p/file', `<html><head><title>Quay</title></head><body><video src="/guarded/media/av-720.mp4"></video></body></html>`);
    site.page(
      '/p/hls',
      `<html><head><title>Tide</title></head><body><video><source src="/guarded/hls/muxed/master.m3u8" type="application/x-mpegURL"></video></body></html>`,
    );
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await site?.close();
  });
  beforeEach(() => void refused.splice(0));

  const PARSE = `mutation($input: ParseInput!) { parse(input: $input) {
    media { url kind height durationSeconds hasAudio delivery headers } alternatives { height delivery } credits { charged balance } } }`;
  type GqlParse = {
    media: Pick<ParseBody['media'], 'url' | 'kind' | 'height' | 'durationSeconds' | 'hasAudio' | 'delivery' | 'headers'>;
    alternatives: { height: number | null; delivery: string }[];
    credits: { charged: number; balance: number };
  };

  /** The same parse through REST and GraphQL, each on an account of its own with 3 credits. */
  async function both(input: Record<string, string>): Promise<{ rest: ParseBody; graphql: GqlParse }> {
    const [a, b] = [await h.account({ credits: 3 }), await h.account({ credits: 3 })];
    const [rest, graphql] = await Promise.all([h.rest('/api/parse', input, a.key), h.gql<{ parse: GqlParse }>(PARSE, { input }, b.key)]);
    expect(rest.statusCode).toBe(200);
    expect(graphql.errors).toBeUndefined();
    for (const { accountId } of [a, b]) expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
    return { rest: parseBody(rest), graphql: graphql.data.parse };
  }

  it('the guard holds: the media refuses a request without the page as Referer', async () => {
    const res = await fetch(`${site.origin}/guarded/media/av-720.mp4`);
    expect(res.status).toBe(403);
    const elsewhere = await fetch(`${site.origin}/guarded/media/av-720.mp4`, { headers: { referer: 'https://other.example/p/x' } });
    expect(elsewhere.status).toBe(403);
  });

  /** What the site refused: once per URL, asked as a caller would (no Referer); never with the page as Referer. */
  const refusedWithReferer = () => refused.filter((r) => !r.endsWith('(no Referer)'));

  it('reads a file’s size, length and sound with the page as Referer, and hands the caller a stream that sends it', async () => {
    const { rest, graphql } = await both({ url: `${site.origin}/p/file` });
    for (const media of [rest.media, graphql.media]) {
      expect(media).toMatchObject({ kind: 'video', height: 720, hasAudio: true, delivery: 'stream', headers: null });
      expect(media.url).not.toContain('/guarded/');
      expect(media.durationSeconds).toBeCloseTo(2, 0);
    }
    const got = await fetchStream(h, rest.media.url);
    expect(got.status).toBe(200);
    expect(got.bytes.equals(readFileSync((await mediaLibrary()).files['/media/av-720.mp4'].path))).toBe(true);
    expect(new Set(refused)).toEqual(new Set(['/media/av-720.mp4 (no Referer)']));
  });

  it('takes the sound of a video only the page may fetch (mode audio): the parse and the stream both send the page as Referer', async () => {
    const { rest, graphql } = await both({ url: `${site.origin}/p/file`, mode: 'audio' });
    for (const media of [rest.media, graphql.media]) expect(media).toMatchObject({ kind: 'audio', delivery: 'stream', hasAudio: true });
    const got = await fetchStream(h, rest.media.url);
    expect(got.status).toBe(200);
    expect(probeBytes(got.bytes, 'm4a').streams).toEqual([{ type: 'audio', codec: 'aac' }]);
    expect(refusedWithReferer()).toEqual([]);
  });

  it('reads an HLS master, its variants and a first segment with the page as Referer, and streams every rendition', async () => {
    const { rest, graphql } = await both({ url: `${site.origin}/p/hls` });
    expect(new Set(refused)).toEqual(new Set(['/hls/muxed/master.m3u8 (no Referer)']));
    for (const body of [rest, graphql]) {
      expect(body.media).toMatchObject({ kind: 'video', hasAudio: true, delivery: 'stream' });
      expect(body.alternatives.map((a) => a.delivery)).toEqual(body.alternatives.map(() => 'stream'));
      // The variants come from the master; the length only from the variant's own playlist, read after it.
      expect(body.media.height).toBe(720);
      expect(body.alternatives.map((a) => a.height)).toEqual(expect.arrayContaining([480]));
      expect(body.media.durationSeconds).toBeCloseTo(2, 0);
    }
    const got = await fetchStream(h, rest.media.url);
    expect(got.status).toBe(200);
    expect(
      probeBytes(got.bytes, 'mp4')
        .streams.map((s) => s.type)
        .sort(),
    ).toEqual(['audio', 'video']);
  });

  it('a source that answers a caller, then refuses it, is not read a second time with the Referer (its bytes count once)', async () => {
    const clip = readFileSync((await mediaLibrary()).files['/media/av-720.mp4'].path);
    const asked: string[] = [];
    let answered = 0;
    site.route('/turncoat.mp4', (req, res) => {
      asked.push(req.headers.referer ?? '(no Referer)');
      // Its first range without a Referer (the moov box is at the end: the read needs a second), then 403.
      if (req.headers.referer || answered++ === 0) return serveBytes(req, res, clip, 'video/mp4');
      res.writeHead(403).end('no hotlinking');
    });
    site.page('/p/turncoat', `<html><head><title>Turncoat</title></head><body><video src="/turncoat.mp4"></video></body></html>`);
    const { rest, graphql } = await both({ url: `${site.origin}/p/turncoat` });
    for (const media of [rest.media, graphql.media]) expect(media).toMatchObject({ delivery: 'direct', height: null, hasAudio: null });
    expect(asked).toEqual(['(no Referer)', '(no Referer)']);
  });

  it('a media URL given alone has no page to name: the CDN refuses it, and the parse says so (nothing charged)', async () => {
    const { key, accountId } = await h.account({ credits: 3 });
    const res = await h.rest('/api/parse', { url: `${site.origin}/guarded/media/av-720.mp4` }, key);
    expect(res.statusCode).toBe(422);
    expect(res.json<ErrorBody>().error.code).toBe('CONTENT_UNAVAILABLE');
    expect(await h.balance(accountId)).toEqual({ available: 3, held: 0 });
  });
});
