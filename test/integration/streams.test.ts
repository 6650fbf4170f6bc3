import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, type Harness } from '../support/harness.js';
import { serveLibrary } from '../support/media-library.js';
import { fetchStream, probeBytes, videoPacketHashes } from '../support/streams.js';
import { type ErrorBody, type JobBody, type ParseBody, parseBody } from '../support/bodies.js';

/**
 * Streams made by the gateway from real media (ffmpeg's own files): the sound of a video, a video
 * without its sound, separate tracks joined; every answer read back with ffprobe, through both doors.
 */
describe('streams: made by the gateway', () => {
  let h: Harness;
  let site: FakeSite;

  beforeAll(async () => {
    site = await startFakeSite();
    await serveLibrary(site);
    site.page(
      '/p/clip',
      `<html><head><title>Harbour “dawn”</title></head><body><video src="${site.origin}/media/av-480.mp4" type="video/mp4"></video></body></html>`,
    );
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await site?.close();
  });

  /** The library's files are 2 s long. */
  const aboutTwoSeconds = (seconds: number) => {
    expect(seconds).toBeGreaterThan(1.8);
    expect(seconds).toBeLessThan(2.4);
  };

  it('audio from an MP4 with sound: one audio stream, no video, the source’s length, charged once', async () => {
    const { key, accountId } = await h.account({ credits: 3 });
    const res = await h.rest('/api/parse', { url: `${site.origin}/p/clip`, mode: 'audio' }, key);
    expect(res.statusCode).toBe(200);
    const body = parseBody(res);
    expect(body.media).toMatchObject({
      kind: 'audio',
      delivery: 'stream',
      hasAudio: true,
      hasVideo: false,
      container: 'm4a',
      headers: null,
    });
    expect(Date.parse(body.media.expiresAt ?? '') - Date.now()).toBeGreaterThan(1790_000);
    const got = await fetchStream(h, body.media.url);
    expect(got.status).toBe(200);
    expect(got.headers['content-type']).toBe('audio/mp4');
    expect(got.headers['content-disposition']).toBe(
      `inline; filename="Harbour _dawn_.m4a"; filename*=UTF-8''Harbour%20%E2%80%9Cdawn%E2%80%9D.m4a`,
    );
    const probed = probeBytes(got.bytes, 'm4a');
    expect(probed.streams).toEqual([{ type: 'audio', codec: 'aac' }]);
    aboutTwoSeconds(probed.durationSeconds);
    // Streams are part of the parse's credit: nothing more is charged, the job counts the bytes.
    expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
    const job = await h.request('GET', `/api/jobs/${body.id}`, { headers: { authorization: `Bearer ${key}` } });
    expect(job.json<JobBody>().streamedBytes).toBe(got.bytes.length);
  });

  const FORMATS = [
    ['best', 'aac', 'audio/mp4', 'm4a'],
    ['m4a', 'aac', 'audio/mp4', 'm4a'],
    ['mp3', 'mp3', 'audio/mpeg', 'mp3'],
    ['opus', 'opus', 'audio/ogg; codecs=opus', 'opus'],
    ['wav', 'pcm_s16le', 'audio/wav', 'wav'],
  ] as const;
  const SOURCES = [
    ['an MP4 with sound', '/media/av-720.mp4'],
    ['an HLS master whose variants carry their sound', '/hls/muxed/master.m3u8'],
  ] as const;

  it.each(SOURCES.flatMap(([what, path]) => FORMATS.map((f) => [f[0], what, path, ...f.slice(1)] as const)))(
    'audioFormat %s from %s: one audio stream of that codec, no video, the source’s length',
    async (audioFormat, _what, path, codec, contentType, container) => {
      const { key } = await h.account({ credits: 2 });
      const res = await h.rest('/api/parse', { url: `${site.origin}${path}`, mode: 'audio', audioFormat }, key);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ audioFormat, media: { kind: 'audio', delivery: 'stream', container } });
      const got = await fetchStream(h, res.json<ParseBody>().media.url);
      expect(got.status).toBe(200);
      expect(got.headers['content-type']).toBe(contentType);
      const probed = probeBytes(got.bytes, container);
      expect(probed.streams).toEqual([{ type: 'audio', codec }]);
      aboutTwoSeconds(probed.durationSeconds);
    },
  );

  it('mute from a video with sound: no audio stream, the same video codec (copied), the same length', async () => {
    const { key } = await h.account({ credits: 2 });
    const res = await h.rest('/api/parse', { url: `${site.origin}/p/clip`, mode: 'mute' }, key);
    expect(res.statusCode).toBe(200);
    expect(res.json<ParseBody>().media).toMatchObject({
      kind: 'video',
      delivery: 'stream',
      hasAudio: false,
      container: 'mp4',
      height: 480,
    });
    const got = await fetchStream(h, res.json<ParseBody>().media.url);
    expect(got.headers['content-type']).toBe('video/mp4');
    const probed = probeBytes(got.bytes, 'mp4');
    expect(probed.streams).toEqual([{ type: 'video', codec: 'h264' }]);
    aboutTwoSeconds(probed.durationSeconds);
    // Not re-encoded: every video packet is the source's, byte for byte.
    const source = Buffer.from(await (await fetch(`${site.origin}/media/av-480.mp4`)).arrayBuffer());
    const packets = videoPacketHashes(got.bytes);
    expect(packets.length).toBeGreaterThan(5);
    expect(packets).toEqual(videoPacketHashes(source));
  });

  it.each([
    ['DASH', '/dash/single/manifest.mpd'],
    ['HLS', '/hls/split/master.m3u8'],
  ])('auto on %s with a separate audio track: one file with both, media.audio kept', async (_kind, path) => {
    const { key } = await h.account({ credits: 2 });
    const res = await h.rest('/api/parse', { url: `${site.origin}${path}`, quality: '480' }, key);
    expect(res.statusCode).toBe(200);
    const { media } = parseBody(res);
    expect(media).toMatchObject({ kind: 'video', delivery: 'stream', hasAudio: true, container: 'mp4', height: 480 });
    expect(media.audio).toMatchObject({ kind: 'audio', delivery: 'direct' });
    const got = await fetchStream(h, media.url);
    expect(got.status).toBe(200);
    const probed = probeBytes(got.bytes, 'mp4');
    expect(probed.streams.map((s) => s.type).sort()).toEqual(['audio', 'video']);
    aboutTwoSeconds(probed.durationSeconds);
  });

  it('mute and audio from a segmented DASH manifest: ffmpeg reads the manifest and its segments through the guarded proxy', async () => {
    const { key } = await h.account({ credits: 3 });
    for (const [mode, types] of [
      ['mute', ['video']],
      ['audio', ['audio']],
    ] as const) {
      const res = await h.rest('/api/parse', { url: `${site.origin}/dash/segmented/manifest.mpd`, mode }, key);
      expect(res.statusCode).toBe(200);
      expect(res.json<ParseBody>().media.delivery).toBe('stream');
      const got = await fetchStream(h, res.json<ParseBody>().media.url);
      expect(got.status).toBe(200);
      const probed = probeBytes(got.bytes, mode === 'mute' ? 'mp4' : 'm4a');
      expect(probed.streams.map((x) => x.type)).toEqual(types);
      aboutTwoSeconds(probed.durationSeconds);
    }
  });

  it('through GraphQL: delivery and a URL that plays, one credit, the job’s streamedBytes', async () => {
    const { key, accountId } = await h.account({ credits: 2 });
    const gql = await h.gql<{ parse: { id: string; media: { url: string } } }>(
      `mutation($input: ParseInput!) { parse(input: $input) { id media { url kind delivery container hasAudio headers } credits { charged } } }`,
      { input: { url: `${site.origin}/p/clip`, mode: 'audio', audioFormat: 'wav' } },
      key,
    );
    expect(gql.errors).toBeUndefined();
    expect(gql.data.parse).toMatchObject({
      media: { kind: 'audio', delivery: 'stream', container: 'wav', hasAudio: true, headers: null },
      credits: { charged: 1 },
    });
    const got = await fetchStream(h, gql.data.parse.media.url);
    expect(probeBytes(got.bytes, 'wav').streams).toEqual([{ type: 'audio', codec: 'pcm_s16le' }]);
    const job = await h.gql<{ job: { streamedBytes: number } }>(
      `query($id: ID!) { job(id: $id) { streamedBytes } }`,
      { id: gql.data.parse.id },
      key,
    );
    expect(job.data.job.streamedBytes).toBe(got.bytes.length);
    expect(await h.balance(accountId)).toEqual({ available: 1, held: 0 });
    const metrics = await h.request('GET', '/metrics');
    expect(Number(/^mediagate_streamed_bytes_total (\d+)/m.exec(metrics.body)?.[1])).toBeGreaterThanOrEqual(got.bytes.length);
  });

  it('replays the same stream URL for the same Idempotency-Key, charged once; HEAD answers a made stream’s headers without making it', async () => {
    const { key, accountId } = await h.account({ credits: 3 });
    const input = { url: `${site.origin}/p/clip`, mode: 'mute' };
    const first = await h.rest('/api/parse', input, key, { 'idempotency-key': 'stream-replay-1' });
    const again = await h.rest('/api/parse', input, key, { 'idempotency-key': 'stream-replay-1' });
    expect(again.json<ParseBody>().media.url).toBe(first.json<ParseBody>().media.url);
    expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
    const head = await h.request('HEAD', new URL(again.json<ParseBody>().media.url).pathname);
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-type']).toBe('video/mp4');
    expect(head.headers['content-disposition']).toMatch(/^inline; filename=/);
    const got = await fetchStream(h, again.json<ParseBody>().media.url);
    expect(probeBytes(got.bytes, 'mp4').streams).toEqual([{ type: 'video', codec: 'h264' }]);
  });

  it('refuses a bad audioFormat or stream through both doors: 400 INVALID_INPUT naming the field', async () => {
    const { key } = await h.account({ credits: 2 });
    const res = await h.rest('/api/parse', { url: `${site.origin}/p/clip`, audioFormat: 'flac', stream: 'yes' }, key);
    expect(res.statusCode).toBe(400);
    expect(res.json<ErrorBody>().error).toMatchObject({
      code: 'INVALID_INPUT',
      details: { audioFormat: expect.any(String), stream: expect.any(String) },
    });
    const gql = await h.gql(`mutation { parse(input: { url: "${site.origin}/p/clip", audioFormat: "flac" }) { id } }`, {}, key);
    expect(gql.errors?.[0].extensions).toMatchObject({ code: 'INVALID_INPUT', details: { audioFormat: expect.any(String) } });
  });
});
