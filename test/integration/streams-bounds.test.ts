import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeSite, serveBytes, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, TEST_PEPPER, type Harness } from '../support/harness.js';
import { serveLibrary } from '../support/media-library.js';
import { fetchStream, probeBytes, streamPath } from '../support/streams.js';
import { waitFor } from '../support/wait-for.js';
import { OPERATOR } from '../../src/modules/principal.js';
import { StreamTokens } from '../../src/modules/streams/stream-token.js';
import type { ErrorBody, ParseBody } from '../support/bodies.js';

/** ffmpeg processes this test process (the gateway) has started and that still run. */
function ffmpegChildren(): number[] {
  const out = execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(process.pid)], { encoding: 'utf8' }).trim();
  return out
    ? out
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .filter(([, comm]) => comm === 'ffmpeg')
        .map(([pid]) => Number(pid))
    : [];
}

/**
 * What a stream may and may not do: the page's Referer sent for the caller, Range on pass-through,
 * expiry, forged tokens, revoked keys, ended memberships, the per-account and ffmpeg caps, a caller
 * who leaves, private addresses on the way, and upstream failures before and after the first byte.
 */
describe('streams: bounds and refusals', () => {
  let h: Harness;
  let site: FakeSite;
  let elsewhere: FakeSite;
  let clip: Buffer;
  const misbehaving = new Set<string>();

  beforeAll(async () => {
    site = await startFakeSite();
    elsewhere = await startFakeSite();
    const library = await serveLibrary(site);
    clip = readFileSync(library.files['/media/av-480.mp4'].path);
    site.page('/p/guarded', `<html><head><title>Guarded</title></head><body><video src="/guarded.mp4"></video></body></html>`);
    // Plays only for the page's own player: its Referer.
    site.route('/guarded.mp4', (req, res) => {
      if (req.headers.referer !== `${site.origin}/p/guarded`) return void res.writeHead(403).end('no hotlinking');
      serveBytes(req, res, clip, 'video/mp4');
    });
    // Sources that serve the parse's reads, then misbehave once a test says so (when it opens the stream).
    site.page('/p/broken', `<html><body><video src="/broken.mp4" type="video/mp4"></video></body></html>`);
    site.route('/broken.mp4', (req, res) =>
      misbehaving.has('/broken.mp4') ? void res.writeHead(500).end() : serveBytes(req, res, clip, 'video/mp4'),
    );
    site.page('/p/cut', `<html><body><video src="/cut.mp4" type="video/mp4"></video></body></html>`);
    site.route('/cut.mp4', (req, res) => {
      if (!misbehaving.has('/cut.mp4')) return serveBytes(req, res, clip, 'video/mp4');
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': String(clip.length) });
      res.write(clip.subarray(0, 20_000), () => res.destroy());
    });
    site.page('/p/hang', `<html><body><video src="/hang.mp4" type="video/mp4"></video></body></html>`);
    site.route('/hang.mp4', (req, res) => (misbehaving.has('/hang.mp4') ? undefined : serveBytes(req, res, clip, 'video/mp4')));
    site.endless('/endless.mp4', 'video/mp4');
    // Larger than STREAM_MAX_BYTES below.
    site.file('/big.mp4', Buffer.alloc(3 * 1024 * 1024, 7), 'video/mp4');
    // A 12-segment HLS playlist whose tenth segment redirects to an address the gateway may not reach.
    const hls = mkdtempSync(join(tmpdir(), 'mediagate-evil-'));
    execFileSync(process.env.FFMPEG_PATH ?? 'ffmpeg', [
      ...['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=5:duration=12'],
      ...['-f', 'lavfi', '-i', 'sine=duration=12', '-c:v', 'libx264', '-g', '5', '-c:a', 'aac', '-shortest'],
      ...['-f', 'hls', '-hls_time', '1', '-hls_playlist_type', 'vod', '-hls_segment_filename', join(hls, 'seg_%03d.ts')],
      join(hls, 'index.m3u8'),
    ]);
    for (const name of readdirSync(hls))
      site.fileFromDisk(`/evil/${name}`, join(hls, name), name.endsWith('.m3u8') ? 'application/vnd.apple.mpegurl' : 'video/mp2t');
    // The same playlist whose eighth segment never comes: its stream stays open, ffmpeg waiting.
    for (const name of readdirSync(hls))
      site.fileFromDisk(`/slow/${name}`, join(hls, name), name.endsWith('.m3u8') ? 'application/vnd.apple.mpegurl' : 'video/mp2t');
    site.route('/slow/seg_007.ts', () => undefined);
    site.route('/evil/seg_009.ts', (_req, res) => void res.writeHead(302, { location: `${elsewhere.origin}/secret.ts` }).end());
    h = await createHarness({
      FETCH_ALLOW_HOSTS: site.hostPort,
      STREAM_MAX_PER_ACCOUNT: '1',
      STREAM_MAX_BYTES: String(2 * 1024 * 1024),
      STREAM_FFMPEG_CONCURRENCY: '1',
      // The endless file's probe gives up soon: its parse is not what is tested.
      PROBE_TIMEOUT_SECONDS: '1',
    });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await site?.close();
    await elsewhere?.close();
  });

  const parse = async (body: Record<string, unknown>, key: string) => {
    const res = await h.rest('/api/parse', body, key);
    expect(res.statusCode).toBe(200);
    return res.json<ParseBody>();
  };

  it('sends the page as Referer for a caller who could not: the direct URL is refused, the stream plays, and Range seeks (206)', async () => {
    const { key } = await h.account({ credits: 2 });
    const body = await parse({ url: `${site.origin}/p/guarded`, stream: true }, key);
    expect(body.media).toMatchObject({ delivery: 'stream', container: 'mp4', headers: null });
    expect(body.media.url).not.toContain('guarded.mp4');
    expect((await fetch(`${site.origin}/guarded.mp4`)).status).toBe(403);
    const whole = await fetchStream(h, body.media.url);
    expect(whole.status).toBe(200);
    expect(whole.bytes.equals(clip)).toBe(true);
    const probed = probeBytes(whole.bytes, 'mp4');
    expect(probed.streams.map((s) => s.codec).sort()).toEqual(['aac', 'h264']);
    const part = await fetchStream(h, body.media.url, { range: 'bytes=1000-1999' });
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 1000-1999/${clip.length}`);
    expect(part.bytes.equals(clip.subarray(1000, 2000))).toBe(true);
    const head = await h.request('HEAD', streamPath(body.media.url));
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-length']).toBe(String(clip.length));
  });

  it('refuses a forged or altered token (404), an expired one (410), a revoked key’s (401) and an ended membership’s (403)', async () => {
    const member = await h.account({ credits: 3 });
    const body = await parse({ url: `${site.origin}/p/guarded`, stream: true }, member.key);
    const path = streamPath(body.media.url);
    const token = path.slice('/api/streams/'.length);
    const altered = token.slice(0, 30) + (token[30] === 'A' ? 'B' : 'A') + token.slice(31);
    for (const bad of [`/api/streams/${'x'.repeat(80)}`, `/api/streams/${altered}`, `/api/streams/${token}x`, '/api/streams/']) {
      const res = await h.request('GET', bad);
      expect({ bad, status: res.statusCode }).toEqual({ bad, status: 404 });
      expect(res.json<ErrorBody>().error.code).toBe('NOT_FOUND');
    }
    // Sealed with the gateway's own key, past its time: what any token becomes after STREAM_TTL_SECONDS.
    const tokens = new StreamTokens(TEST_PEPPER);
    const grant = tokens.open(token)!;
    const expired = await h.request('GET', `/api/streams/${tokens.seal({ ...grant, expiresAt: Date.now() - 1 })}`);
    expect(expired.statusCode).toBe(410);
    expect(expired.json<ErrorBody>().error.code).toBe('STREAM_EXPIRED');

    await h.services.accounts.cancelMembership(OPERATOR, member.accountId);
    const ended = await h.request('GET', path);
    expect(ended.statusCode).toBe(403);
    expect(ended.json<ErrorBody>().error.code).toBe('MEMBERSHIP_REQUIRED');

    const other = await h.account({ credits: 2 });
    const second = await parse({ url: `${site.origin}/p/guarded`, stream: true }, other.key);
    await h.services.apiKeys.revoke(OPERATOR, other.keyId);
    const revoked = await h.request('GET', streamPath(second.media.url));
    expect(revoked.statusCode).toBe(401);
    expect(revoked.json<ErrorBody>().error.code).toBe('UNAUTHENTICATED');
  });

  it('caps streams per account (429 with Retry-After) and ffmpeg processes (503 with Retry-After)', async () => {
    const a = await h.account({ credits: 3 });
    const endless = await parse({ url: `${site.origin}/endless.mp4`, stream: true }, a.key);
    const open = new AbortController();
    const first = await fetch(h.url + streamPath(endless.media.url), { signal: open.signal });
    expect(first.status).toBe(200);
    const again = await h.request('GET', streamPath(endless.media.url));
    expect(again.statusCode).toBe(429);
    expect(again.json<ErrorBody>().error.code).toBe('RATE_LIMITED');
    expect(Number(again.headers['retry-after'])).toBeGreaterThan(0);
    open.abort();

    // One ffmpeg at most: a stream still opening its source holds it.
    const b = await h.account({ credits: 2 });
    const c = await h.account({ credits: 2 });
    const hanging = await parse({ url: `${site.origin}/p/hang`, mode: 'mute' }, b.key);
    const other = await parse({ url: `${site.origin}/media/av-480.mp4`, mode: 'audio' }, c.key);
    misbehaving.add('/hang.mp4');
    const leave = new AbortController();
    const pending = fetch(h.url + streamPath(hanging.media.url), { signal: leave.signal }).catch(() => null);
    await waitFor(() => ffmpegChildren().length === 1);
    const busy = await h.request('GET', streamPath(other.media.url));
    expect(busy.statusCode).toBe(503);
    expect(busy.json<ErrorBody>().error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(Number(busy.headers['retry-after'])).toBeGreaterThan(0);
    // The caller leaves before the first byte: its ffmpeg is killed, its place freed.
    leave.abort();
    await pending;
    await waitFor(() => ffmpegChildren().length === 0, { timeout: 1000 });
    const now = await fetchStream(h, other.media.url);
    expect(now.status).toBe(200);
  });

  it('an abandoned stream stops its ffmpeg within a second', async () => {
    const { key } = await h.account({ credits: 2 });
    const body = await parse({ url: `${site.origin}/slow/index.m3u8`, mode: 'audio', audioFormat: 'mp3' }, key);
    const leave = new AbortController();
    const res = await fetch(h.url + streamPath(body.media.url), { signal: leave.signal });
    expect(res.status).toBe(200);
    await res.body!.getReader().read();
    // Its ffmpeg still runs, waiting on the segment that does not come.
    expect(ffmpegChildren()).toHaveLength(1);
    leave.abort();
    await waitFor(() => ffmpegChildren().length === 0, { timeout: 1000 });
  });

  it('a segment redirected to a private address mid-stream: never reached, the stream cut rather than ended', async () => {
    const { key } = await h.account({ credits: 2 });
    const body = await parse({ url: `${site.origin}/evil/index.m3u8`, stream: true }, key);
    expect(body.media.delivery).toBe('stream');
    const before = elsewhere.connections;
    const res = await fetch(h.url + streamPath(body.media.url));
    expect(res.status).toBe(200);
    await expect(res.arrayBuffer()).rejects.toThrow();
    expect(elsewhere.connections).toBe(before);
  });

  it('cuts a stream at STREAM_MAX_BYTES: never more sent, never ended as if whole', async () => {
    const { key } = await h.account({ credits: 2 });
    const body = await parse({ url: `${site.origin}/big.mp4`, stream: true }, key);
    const res = await fetch(h.url + streamPath(body.media.url));
    expect(res.status).toBe(200);
    let received = 0;
    await expect(
      (async () => {
        for await (const chunk of res.body as AsyncIterable<Uint8Array>) received += chunk.length;
      })(),
    ).rejects.toThrow();
    expect(received).toBeLessThanOrEqual(2 * 1024 * 1024);
    const [row] = await waitFor(async () => {
      const rows = await h.sql<{ streamed_bytes: string }>('select streamed_bytes from job where id = ?', [body.id]);
      return Number(rows[0].streamed_bytes) > 0 && rows;
    });
    expect(Number(row.streamed_bytes)).toBeLessThanOrEqual(2 * 1024 * 1024);
  });

  it('upstream failing before the first byte is 502 PROVIDER_ERROR; after it, the connection is cut', async () => {
    const { key } = await h.account({ credits: 3 });
    const broken = await parse({ url: `${site.origin}/p/broken`, stream: true }, key);
    const made = await parse({ url: `${site.origin}/p/broken`, mode: 'mute' }, key);
    misbehaving.add('/broken.mp4');
    const passed = await h.request('GET', streamPath(broken.media.url));
    expect(passed.statusCode).toBe(502);
    expect(passed.json<ErrorBody>().error.code).toBe('PROVIDER_ERROR');
    const processed = await h.request('GET', streamPath(made.media.url));
    expect(processed.statusCode).toBe(502);
    expect(processed.json<ErrorBody>().error.code).toBe('PROVIDER_ERROR');

    const cut = await parse({ url: `${site.origin}/p/cut`, stream: true }, key);
    misbehaving.add('/cut.mp4');
    const res = await fetch(h.url + streamPath(cut.media.url));
    expect(res.status).toBe(200);
    await expect(res.arrayBuffer()).rejects.toThrow();
    await waitFor(async () => {
      const [row] = await h.sql<{ streamed_bytes: string }>('select streamed_bytes from job where id = ?', [cut.id]);
      return Number(row.streamed_bytes) > 0;
    });
  });
});
