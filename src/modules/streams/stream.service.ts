import { PassThrough, Transform, type Readable } from 'node:stream';
import { AppError } from '../../errors.js';
import { startFfmpegStream, type StreamInput } from '../../media/ffmpeg-stream.js';
import { streamRecipe } from '../../media/stream-recipe.js';
import type { GuardedHttpClient } from '../../net/guarded-client.js';
import { startGuardedProxy } from '../../net/guarded-proxy.js';
import { openRelay } from '../../net/probe-relay.js';
import { contentDisposition } from './content-disposition.js';
import type { StreamLimits, Release } from './stream-limits.js';
import type { StreamRepository } from './stream.repository.js';
import type { StreamGrant, StreamTokens } from './stream-token.js';

/** What a stream's door sends: the status and headers, and the body as it comes (null for HEAD). */
export interface StreamAnswer {
  status: number;
  headers: Record<string, string>;
  body: Readable | null;
}

/** A stream request as the door saw it. */
export interface StreamRequest {
  token: string;
  method: 'GET' | 'HEAD';
  range: string | null;
  /** Aborted when the caller leaves before the answer begins: its ffmpeg and upstream stop at once. */
  signal: AbortSignal;
}

export interface StreamServiceDeps {
  tokens: StreamTokens;
  repository: StreamRepository;
  limits: StreamLimits;
  client: GuardedHttpClient;
  bounds: { maxBytes: number; maxMs: number; allowHosts: readonly string[]; ffmpegPath: string };
  /** Told of every chunk sent to a caller (the bytes counter of /metrics). */
  onBytes: (n: number) => void;
  log: { warn(obj: object, msg: string): void };
}

/** Upstream headers a pass-through stream repeats. */
const PASSED = ['content-type', 'content-length', 'content-range', 'accept-ranges', 'last-modified', 'etag'];

const upstreamFailed = (why: string) => new AppError('PROVIDER_ERROR', `The media could not be fetched: ${why}.`);

/**
 * Serves a parse's stream URLs (CONTRACT.md, Streams): opens the sealed token, checks the key and the
 * membership again, takes a place in the bounds, and sends the source through (Range honoured) or
 * ffmpeg's output as it is written. Nothing is buffered whole; whatever ends the stream (the end,
 * the caller leaving, a failure, a cap) stops ffmpeg and the upstream requests at once.
 */
export class StreamService {
  constructor(private readonly deps: StreamServiceDeps) {}

  async open(request: StreamRequest): Promise<StreamAnswer> {
    const grant = this.deps.tokens.open(request.token);
    if (!grant) throw new AppError('NOT_FOUND', 'No such stream.');
    if (Date.now() >= grant.expiresAt) throw new AppError('STREAM_EXPIRED');
    const standing = await this.deps.repository.standing(grant.jobId, grant.accountId, grant.apiKeyId);
    if (!standing.jobKnown) throw new AppError('NOT_FOUND', 'No such stream.');
    if (standing.keyRevoked) throw new AppError('UNAUTHENTICATED');
    if (grant.membership && !standing.member) throw new AppError('MEMBERSHIP_REQUIRED');
    const disposition = contentDisposition(grant.title, this.extensionOf(grant));
    const passing = grant.processing === 'pass' && !grant.sources[0].manifest;
    if (request.method === 'HEAD') {
      if (passing) return this.pass(grant, request, disposition, null);
      const recipe = streamRecipe(grant.processing, grant.sources, grant.kind);
      return {
        status: 200,
        headers: { 'content-type': recipe.contentType, 'content-disposition': disposition, 'accept-ranges': 'none' },
        body: null,
      };
    }
    const releaseAccount = this.deps.limits.takeAccount(grant.accountId);
    try {
      return passing
        ? await this.pass(grant, request, disposition, releaseAccount)
        : await this.process(grant, disposition, releaseAccount, request.signal);
    } catch (err) {
      releaseAccount();
      throw err;
    }
  }

  private extensionOf(grant: StreamGrant): string | null {
    if (grant.processing !== 'pass' || grant.sources[0].manifest)
      return streamRecipe(grant.processing, grant.sources, grant.kind).extension;
    const m = /\.([a-z0-9]{2,5})$/i.exec(URL.parse(grant.sources[0].url)?.pathname ?? '');
    return m ? m[1].toLowerCase() : null;
  }

  /** The source as it is, with the caller's Range forwarded; its status (200, 206, 416) is the answer's. */
  private async pass(grant: StreamGrant, request: StreamRequest, disposition: string, release: Release | null): Promise<StreamAnswer> {
    const [source] = grant.sources;
    const abort = new AbortController();
    const forward = () => abort.abort();
    request.signal.addEventListener('abort', forward, { once: true });
    let upstream: Awaited<ReturnType<GuardedHttpClient['open']>>;
    try {
      upstream = await this.deps.client.open(source.url, {
        method: request.method,
        headers: { ...source.headers, ...(request.range ? { range: request.range } : {}) },
        timeoutMs: this.deps.bounds.maxMs,
        signal: abort.signal,
        throwOnHttpError: false,
      });
    } catch (err) {
      request.signal.removeEventListener('abort', forward);
      if (err instanceof AppError) throw err;
      throw upstreamFailed('the request failed');
    }
    request.signal.removeEventListener('abort', forward);
    if (upstream.status !== 200 && upstream.status !== 206 && upstream.status !== 416) {
      drop(upstream.body);
      throw upstreamFailed(`the source answered ${upstream.status}`);
    }
    const headers: Record<string, string> = { 'content-disposition': disposition };
    for (const h of PASSED) if (upstream.headers[h]) headers[h] = upstream.headers[h];
    if (request.method === 'HEAD' || upstream.status === 416) {
      drop(upstream.body);
      release?.();
      return { status: upstream.status, headers, body: request.method === 'HEAD' ? null : emptyBody() };
    }
    const body = this.counted(grant, () => {
      drop(upstream.body);
      abort.abort();
      release?.();
    });
    upstream.body.on('error', () => body.destroy(new Error('the source failed mid-stream')));
    upstream.body.on('end', () => body.end());
    upstream.body.on('data', (chunk: Buffer) => {
      if (!body.write(chunk)) upstream.body.pause();
    });
    body.on('drain', () => upstream.body.resume());
    return { status: upstream.status, headers, body };
  }

  /** ffmpeg's output as it is written, once its first byte is there (a failure before it is 502). */
  private async process(grant: StreamGrant, disposition: string, releaseAccount: Release, signal: AbortSignal): Promise<StreamAnswer> {
    const releaseFfmpeg = this.deps.limits.takeFfmpeg();
    const closers: Array<() => Promise<void>> = [];
    let failure: string | null = null;
    const { maxBytes, maxMs, allowHosts, ffmpegPath } = this.deps.bounds;
    const closeAll = () => Promise.all(closers.map((c) => c().catch(() => undefined)));
    let ffmpeg: ReturnType<typeof startFfmpegStream>;
    try {
      const inputs: StreamInput[] = [];
      for (const source of grant.sources) {
        if (source.manifest) {
          const proxy = await startGuardedProxy(allowHosts, { maxBytes });
          closers.push(() => proxy.close());
          inputs.push({ manifestUrl: source.url, proxyUrl: proxy.url, headers: source.headers });
        } else {
          const relay = await openRelay(this.deps.client, source.url, { maxBytes, timeoutMs: maxMs, headers: source.headers });
          closers.push(() => relay.close());
          inputs.push({ relayUrl: relay.url });
        }
      }
      const recipe = streamRecipe(grant.processing, grant.sources, grant.kind);
      ffmpeg = startFfmpegStream(inputs, recipe.output, {
        ffmpegPath,
        onLostSegment: (line) => {
          failure ??= line;
          ffmpeg.kill();
        },
      });
      const stopped = once(() => {
        ffmpeg.kill();
        void closeAll();
        releaseFfmpeg();
        releaseAccount();
      });
      const deadline = setTimeout(() => body.destroy(new Error('the stream ran past STREAM_MAX_SECONDS')), maxMs).unref();
      const body = this.counted(grant, () => {
        clearTimeout(deadline);
        stopped();
      });
      // A caller gone before the first byte: ffmpeg is killed, and the wait below ends with it.
      const leave = () => body.destroy();
      signal.addEventListener('abort', leave, { once: true });
      if (signal.aborted) leave();
      const first = await firstChunk(ffmpeg.stdout, ffmpeg.exited);
      signal.removeEventListener('abort', leave);
      if (!first) {
        const { code, stderr } = await ffmpeg.exited;
        body.destroy();
        this.deps.log.warn({ jobId: grant.jobId, code, stderr: stderr.slice(-600) }, 'stream failed before its first byte');
        throw upstreamFailed('the source could not be read');
      }
      body.write(first);
      // Whole only when ffmpeg's output ended, it exited 0, and no segment was lost on the way; anything else is cut.
      let outputEnded = false;
      let exit: { code: number | null; stderr: string } | null = null;
      const settle = () => {
        if (!outputEnded || !exit || body.destroyed) return;
        if (exit.code === 0 && !failure) return void body.end();
        this.deps.log.warn({ jobId: grant.jobId, code: exit.code, failure, stderr: exit.stderr.slice(-600) }, 'stream cut');
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
      return {
        status: 200,
        headers: { 'content-type': recipe.contentType, 'content-disposition': disposition, 'accept-ranges': 'none' },
        body,
      };
    } catch (err) {
      await closeAll();
      releaseFfmpeg();
      throw err;
    }
  }

  /**
   * The body sent to the caller: counts its bytes (metrics; the job when it ends), cuts it past
   * STREAM_MAX_BYTES, and runs `stop` once whichever way it ends (done, caller gone, failure).
   */
  private counted(grant: StreamGrant, stop: () => void): Transform {
    let sent = 0;
    const { maxBytes } = this.deps.bounds;
    const body = new Transform({
      transform: (chunk: Buffer, _enc, done) => {
        sent += chunk.length;
        if (sent > maxBytes) return done(new Error('the stream passed STREAM_MAX_BYTES'));
        this.deps.onBytes(chunk.length);
        done(null, chunk);
      },
    });
    body.once('close', () => {
      stop();
      this.deps.repository.addStreamedBytes(grant.jobId, Math.min(sent, maxBytes)).catch((err: unknown) => {
        this.deps.log.warn({ err, jobId: grant.jobId }, 'could not count a stream’s bytes on its job');
      });
    });
    return body;
  }
}

/** Closes an upstream body that will not be read (an abort error it raises then is expected). */
function drop(body: Readable): void {
  body.on('error', () => {});
  body.destroy();
}

function emptyBody(): Readable {
  const body = new PassThrough();
  body.end();
  return body;
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

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
