import { join } from 'node:path';
import { runTool } from '../src/media/ffmpeg.js';
import { watchProcess } from './load.js';

/**
 * Streams through the gateway beside a plain download of the same file: a video with sound as a
 * page offers it, fetched from the page server as `curl` would, then through the gateway's stream
 * URL passed through (`stream: true`), without its sound (`mode: mute`, remuxed), as its audio
 * (`mode: audio`, copied and as MP3), one at a time and four at once. Each row: the bytes, MB/s, the
 * share of the plain download's rate, the CPU the gateway and its ffmpeg children spent per stream,
 * and the gateway's peak resident memory.
 */

/** A video with sound, as sites serve them: H.264 and AAC in MP4, moov first. */
export async function makeStreamMedia(dir: string, seconds: number, ffmpegPath: string): Promise<string> {
  const path = join(dir, 'stream.mp4');
  await runTool(
    ffmpegPath,
    [
      ...['-hide_banner', '-loglevel', 'error', '-y'],
      ...['-f', 'lavfi', '-i', `testsrc2=size=1280x720:rate=30:duration=${seconds}`],
      ...['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=44100:duration=${seconds}`],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-b:v', '4M', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '128k'],
      ...['-movflags', '+faststart', '-shortest', path],
    ],
    {},
    10 * 60_000,
  );
  return path;
}

export interface StreamRow {
  scenario: string;
  streams: number;
  status: string;
  /** What each caller received. */
  'MB out each': number;
  's each': number;
  /** The source's bytes each stream went through per second (the whole file, whatever came out of it). */
  'source MB/s each': number;
  '÷ plain': number | string;
  'CPU ms per stream': number;
  'gateway RSS MB': number;
}

interface Case {
  scenario: string;
  /** The parse request's fields beyond the page URL; null: the plain download of the file itself. */
  request: Record<string, unknown> | null;
}

const CASES: Case[] = [
  { scenario: 'plain download of the file (as curl)', request: null },
  { scenario: 'stream: true (passed through)', request: { stream: true } },
  { scenario: 'mute (the video without its sound, remuxed)', request: { mode: 'mute' } },
  { scenario: 'audio, best (the AAC copied into M4A)', request: { mode: 'audio' } },
  { scenario: 'audio, mp3 (re-encoded)', request: { mode: 'audio', audioFormat: 'mp3' } },
];

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Reads a response to its end; its byte count. */
async function drain(res: Response): Promise<number> {
  let bytes = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.byteLength;
  return bytes;
}

/** The URL one stream is read from: the plain file, or the gateway's stream URL a parse answered. */
async function urlFor(opts: { gateway: string; key: string; pageUrl: string; fileUrl: string }, c: Case): Promise<string> {
  if (!c.request) return opts.fileUrl;
  const res = await fetch(`${opts.gateway}/api/parse`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${opts.key}` },
    body: JSON.stringify({ url: opts.pageUrl, quality: '720', ...c.request }),
  });
  const body = (await res.json()) as { media?: { url: string; delivery?: string }; error?: { code: string; message: string } };
  if (!res.ok || !body.media) throw new Error(`parse ${res.status}: ${body.error?.code} ${body.error?.message}`);
  if (body.media.delivery !== 'stream') throw new Error(`the parse answered delivery ${body.media.delivery}, not a stream`);
  // The stream URL is made from PUBLIC_URL; the bench reaches the gateway where it listens.
  const url = new URL(body.media.url);
  return `${opts.gateway}${url.pathname}${url.search}`;
}

/** Every case, one stream then `parallel` at once. */
export async function runStreams(opts: {
  gateway: string;
  gatewayPid: number;
  key: string;
  pageUrl: string;
  fileUrl: string;
  /** The source file's size: every stream reads all of it. */
  sourceBytes: number;
  parallel: number;
}): Promise<StreamRow[]> {
  const rows: StreamRow[] = [];
  let plainRate = 0;
  for (const c of CASES) {
    for (const streams of [1, opts.parallel]) {
      // Each stream its own parse (a credit each), so no two share one token.
      const urls = await Promise.all(Array.from({ length: streams }, () => urlFor(opts, c)));
      const watch = watchProcess(opts.gatewayPid);
      const started = performance.now();
      let status = 'ok';
      const sizes = await Promise.all(
        urls.map(async (url) => {
          const res = await fetch(url, { signal: AbortSignal.timeout(600_000) });
          if (!res.ok) status = `HTTP ${res.status}`;
          return drain(res);
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      const { rssMb, cpuMs } = watch.stop();
      const mbEach = sizes.reduce((a, b) => a + b, 0) / streams / 1e6;
      // Streams run side by side: each took the whole stretch.
      const rate = opts.sourceBytes / 1e6 / seconds;
      if (!c.request && streams === 1) plainRate = rate;
      rows.push({
        scenario: c.scenario,
        streams,
        status,
        'MB out each': round(mbEach),
        's each': round(seconds, 2),
        'source MB/s each': round(rate),
        '÷ plain': c.request && plainRate ? round(rate / plainRate, 2) : '—',
        // The plain download is the page server's work, not the gateway's.
        'CPU ms per stream': c.request ? Math.round(cpuMs / streams) : 0,
        'gateway RSS MB': Math.round(rssMb),
      });
    }
  }
  return rows;
}
