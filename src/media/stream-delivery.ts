import type { Readable, Transform } from 'node:stream';
import { AppError } from '../errors.js';
import type { GuardedHttpClient } from '../net/guarded-client.js';
import { startGuardedProxy } from '../net/guarded-proxy.js';
import { openRelay } from '../net/probe-relay.js';
import { startFfmpegStream, type FfmpegStream, type StreamInput } from './ffmpeg-stream.js';
import type { StreamRecipe } from './stream-recipe.js';

/** One input of a stream: the URL and the request headers it is fetched with (the page as Referer among them). */
export interface StreamSource {
  url: string;
  headers: Record<string, string>;
  /** m3u8 or mpd: ffmpeg reads the manifest and its segments; anything else is one file. */
  manifest: 'm3u8' | 'mpd' | null;
  /** The source's codecs as the parse knew them (e.g. "mp4a.40.2" or "aac"), to pick a container without re-encoding. */
  codecs: string | null;
  /** The source's own container (mp4, webm, m3u8, mpd, …) as the parse knew it: where codecs are unknown, what can hold them. */
  container?: string | null;
}

/** What a stream answers: status, headers, and the body as it comes (null for HEAD). */
export interface Delivery {
  status: number;
  headers: Record<string, string>;
  body: Readable | null;
}

/**
 * Where the bytes go: a stream made for the caller (it counts and caps them), told how to stop
 * whatever feeds it; it calls `stop` once, however it ends (done, caller gone, failure, cap).
 */
export type Sink = (stop: () => void) => Transform;

export interface MadeBounds {
  maxBytes: number;
  maxMs: number;
  allowHosts: readonly string[];
  ffmpegPath: string;
}

/** Upstream headers a pass-through stream repeats. */
const PASSED = ['content-type', 'content-length', 'content-range', 'accept-ranges', 'last-modified', 'etag'];

export const upstreamFailed = (why: string) => new AppError('PROVIDER_ERROR', `The media could not be fetched: ${why}.`);

/**
 * The source as it is, with the caller's Range forwarded (HEAD as HEAD); its status (200, 206, 416)
 * is the answer's. Anything else before the first byte is 502 PROVIDER_ERROR.
 */
export async function passSource(
  client: GuardedHttpClient,
  source: StreamSource,
  request: { head: boolean; range: string | null; signal: AbortSignal; timeoutMs: number; disposition: string },
  sink: Sink | null,
): Promise<Delivery> {
  const abort = new AbortController();
  const forward = () => abort.abort();
  request.signal.addEventListener('abort', forward, { once: true });
  let upstream: Awaited<ReturnType<GuardedHttpClient['open']>>;
  try {
    upstream = await client.open(source.url, {
      method: request.head ? 'HEAD' : 'GET',
      headers: { ...source.headers, ...(request.range ? { range: request.range } : {}) },
      timeoutMs: request.timeoutMs,
      signal: abort.signal,
      throwOnHttpError: false,
    });
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw upstreamFailed('the request failed');
  } finally {
    request.signal.removeEventListener('abort', forward);
  }
  if (upstream.status !== 200 && upstream.status !== 206 && upstream.status !== 416) {
    drop(upstream.body);
    throw upstreamFailed(`the source answered ${upstream.status}`);
  }
  const headers: Record<string, string> = { 'content-disposition': request.disposition };
  for (const h of PASSED) if (upstream.headers[h]) headers[h] = upstream.headers[h];
  if (!sink || upstream.status === 416) {
    drop(upstream.body);
    return { status: upstream.status, headers, body: null };
  }
  const body = sink(() => {
    drop(upstream.body);
    abort.abort();
  });
  upstream.body.on('error', () => body.destroy(new Error('the source failed mid-stream')));
  upstream.body.on('end', () => body.end());
  upstream.body.on('data', (chunk: Buffer) => {
    if (!body.write(chunk)) upstream.body.pause();
  });
  body.on('drain', () => upstream.body.resume());
  return { status: upstream.status, headers, body };
}

/** The headers of a stream ffmpeg makes (HEAD answers them without making it). */
export function madeHeaders(recipe: StreamRecipe, disposition: string): Record<string, string> {
  return { 'content-type': recipe.contentType, 'content-disposition': disposition, 'accept-ranges': 'none' };
}

/**
 * ffmpeg's output as it is written, once its first byte is there (a failure before it is 502
 * PROVIDER_ERROR). Files are read through the loopback relay, manifests through the guarded proxy;
 * the stream is ended only when ffmpeg's output ended, it exited 0 and no segment was lost, and cut
 * otherwise. `stopped` is told once everything it started is stopping.
 */
export async function makeStream(
  client: GuardedHttpClient,
  sources: readonly StreamSource[],
  recipe: StreamRecipe,
  options: { bounds: MadeBounds; signal: AbortSignal; disposition: string; onFailure: (why: object) => void },
  sink: Sink,
  stopped: () => void,
): Promise<Delivery> {
  const { maxBytes, maxMs, allowHosts, ffmpegPath } = options.bounds;
  const closers: Array<() => Promise<void>> = [];
  const closeAll = () => Promise.all(closers.map((c) => c().catch(() => undefined)));
  let failure: string | null = null;
  let ffmpeg: FfmpegStream;
  try {
    const inputs: StreamInput[] = [];
    for (const source of sources) {
      if (source.manifest) {
        const proxy = await startGuardedProxy(allowHosts, { maxBytes });
        closers.push(() => proxy.close());
        inputs.push({ manifestUrl: source.url, proxyUrl: proxy.url, headers: source.headers });
      } else {
        const relay = await openRelay(client, source.url, { maxBytes, timeoutMs: maxMs, headers: source.headers });
        closers.push(() => relay.close());
        inputs.push({ relayUrl: relay.url });
      }
    }
    ffmpeg = startFfmpegStream(inputs, recipe.output, {
      ffmpegPath,
      onLostSegment: (line) => {
        failure ??= line;
        ffmpeg.kill();
      },
    });
  } catch (err) {
    await closeAll();
    stopped();
    throw err;
  }
  const deadline = setTimeout(() => body.destroy(new Error('the stream ran past STREAM_MAX_SECONDS')), maxMs).unref();
  const body = sink(() => {
    clearTimeout(deadline);
    ffmpeg.kill();
    void closeAll();
    stopped();
  });
  // A caller gone before the first byte: ffmpeg is killed, and the wait below ends with it.
  const leave = () => body.destroy();
  options.signal.addEventListener('abort', leave, { once: true });
  if (options.signal.aborted) leave();
  const first = await firstChunk(ffmpeg.stdout, ffmpeg.exited);
  options.signal.removeEventListener('abort', leave);
  if (!first) {
    const { code, stderr } = await ffmpeg.exited;
    body.destroy();
    options.onFailure({ stage: 'before the first byte', code, stderr: stderr.slice(-600) });
    throw upstreamFailed('the source could not be read');
  }
  body.write(first);
  let outputEnded = false;
  let exit: { code: number | null; stderr: string } | null = null;
  const settle = () => {
    if (!outputEnded || !exit || body.destroyed) return;
    if (exit.code === 0 && !failure) return void body.end();
    options.onFailure({ stage: 'cut', code: exit.code, failure, stderr: exit.stderr.slice(-600) });
    body.destroy(new Error('the stream failed mid-way'));
  };
  ffmpeg.stdout.once('end', () => {
    outputEnded = true;
    settle();
  });
  void ffmpeg.exited.then((e) => {
    exit = e;
    settle();
  });
  ffmpeg.stdout.on('data', (chunk: Buffer) => {
    if (!body.write(chunk)) ffmpeg.stdout.pause();
  });
  body.on('drain', () => ffmpeg.stdout.resume());
  ffmpeg.stdout.resume();
  return { status: 200, headers: madeHeaders(recipe, options.disposition), body };
}

/** Closes an upstream body that will not be read (an abort error it raises then is expected). */
function drop(body: Readable): void {
  body.on('error', () => {});
  body.destroy();
}

/** The first chunk a process writes, or null when it exits (or fails) first. */
function firstChunk(stdout: Readable, exited: Promise<unknown>): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const onData = (chunk: Buffer) => {
      stdout.pause();
      cleanup();
      resolve(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(null);
    };
    const cleanup = () => {
      stdout.off('data', onData);
      stdout.off('end', onEnd);
    };
    stdout.on('data', onData);
    stdout.once('end', onEnd);
    void exited.then(() => setImmediate(onEnd));
  });
}
