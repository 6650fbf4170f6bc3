import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, type Harness } from '../support/harness.js';
import { serveLibrary } from '../support/media-library.js';
import { fetchStream, probeBytes } from '../support/streams.js';

/**
 * Streams made by the gateway from real media (ffmpeg's own files): the sound of a video, a video
 * without its sound, separate tracks joined; every answer read back with ffprobe.
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

  it('audio from an MP4 with sound: one audio stream, no video, the source’s length, charged once', async () => {
    const { key, accountId } = await h.account({ credits: 3 });
    const res = await h.rest('/api/parse', { url: `${site.origin}/p/clip`, mode: 'audio' }, key);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.media).toMatchObject({
      kind: 'audio',
      delivery: 'stream',
      hasAudio: true,
      hasVideo: false,
      container: 'm4a',
      headers: null,
    });
    const got = await fetchStream(h, body.media.url);
    expect(got.status).toBe(200);
    expect(got.headers['content-type']).toBe('audio/mp4');
    expect(got.headers['content-disposition']).toContain("filename*=UTF-8''Harbour%20%E2%80%9Cdawn%E2%80%9D.m4a");
    const probed = probeBytes(got.bytes, 'm4a');
    expect(probed.streams).toEqual([{ type: 'audio', codec: 'aac' }]);
    expect(probed.durationSeconds).toBeGreaterThan(1.8);
    expect(probed.durationSeconds).toBeLessThan(2.3);
    expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
  });
});
