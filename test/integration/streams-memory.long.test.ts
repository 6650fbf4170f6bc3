import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { cachedPath } from '../support/fixture-cache.js';
import { rss, type GatewayProcess } from '../model/gateway-process.js';
import { measuredGateway, type MeasuredGateway } from '../support/gateway-env.js';
import type { Harness } from '../support/harness.js';
import { streamPath } from '../support/streams.js';
import type { JobBody } from '../support/bodies.js';

const run = promisify(execFile);
const MiB = 1024 * 1024;

/**
 * A 30-minute video (made by ffmpeg from lavfi sources at a tiny size, its bit rate held at 400
 * kbit/s: about 95 MB) through a stream the gateway makes: the gateway's memory stays flat, because
 * ffmpeg's output is passed on as it comes, never held whole.
 */
describe('streams: memory over a 30-minute file', () => {
  let h: Harness;
  let site: FakeSite;
  let path: string;
  let measured: MeasuredGateway;
  let gateway: GatewayProcess;

  beforeAll(async () => {
    path = await cachedPath(join(tmpdir(), 'mediagate-stream-30min-v1.mp4'), async (partial) => {
      await run(process.env.FFMPEG_PATH ?? 'ffmpeg', [
        ...['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=32x32:rate=5:duration=1800'],
        ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=8000:duration=1800', '-c:v', 'libx264', '-preset', 'ultrafast'],
        ...['-b:v', '400k', '-minrate', '400k', '-maxrate', '400k', '-bufsize', '400k', '-x264-params', 'nal-hrd=cbr'],
        ...['-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '24k', '-ac', '1', '-movflags', '+faststart', '-f', 'mp4', partial],
      ]);
    });
    site = await startFakeSite();
    // Served from disk as it is read (with Range), so the file is never in this process's memory.
    site.fileFromDisk('/long.mp4', path, 'video/mp4');
    measured = await measuredGateway(site);
    ({ h, gateway } = measured);
  }, 120_000);
  afterAll(async () => {
    await measured?.close();
    await site?.close();
  });

  it('keeps the gateway’s memory flat while it streams the 30-minute video without its sound, three times over', async () => {
    const { key } = await h.account({ credits: 2 });
    const parsed = await fetch(`${gateway.url}/api/parse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ url: `${site.origin}/long.mp4`, mode: 'mute' }),
    });
    expect(parsed.status).toBe(200);
    const body = (await parsed.json()) as { id: string; media: { url: string; delivery: string; durationSeconds: number } };
    expect(body.media).toMatchObject({ delivery: 'stream', durationSeconds: 1800 });
    const start = rss(gateway.pid);
    let peak = start;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rss(gateway.pid));
    }, 50);
    const peaks: number[] = [];
    const sizes: number[] = [];
    const began = Date.now();
    try {
      for (let i = 0; i < 3; i++) {
        const stream = await fetch(gateway.url + streamPath(body.media.url));
        expect(stream.status).toBe(200);
        let bytes = 0;
        for await (const chunk of stream.body as AsyncIterable<Uint8Array>) bytes += chunk.length;
        sizes.push(bytes);
        peaks.push(peak - start);
      }
    } finally {
      clearInterval(sampler);
    }
    const total = sizes.reduce((a, b) => a + b, 0);
    const mib = (n: number) => (n / MiB).toFixed(1);
    // What the run measured, for the report.
    console.info(
      `streamed 3 x ${mib(sizes[0])} MiB in ${((Date.now() - began) / 1000).toFixed(1)} s; gateway rss ${mib(start)} MiB at the start, growth after each stream: ${peaks.map(mib).join(', ')} MiB`,
    );
    // The video track of 30 minutes at 400 kbit/s, without its sound: about 86 MiB, the same each time.
    expect(sizes[0]).toBeGreaterThan(80 * MiB);
    expect(new Set(sizes).size).toBe(1);
    // Never the file held whole: the growth stays under one stream's size (V8 lets up to 64 MiB of
    // freed buffers wait for its next collection), and it does not grow with what was streamed.
    expect(peaks[2]).toBeLessThan(96 * MiB);
    expect(peaks[2] - peaks[0]).toBeLessThan(12 * MiB);
    const job = await h.request('GET', `/api/jobs/${body.id}`, { headers: { authorization: `Bearer ${key}` } });
    expect(job.json<JobBody>().streamedBytes).toBe(total);
  }, 60_000);
});
