import { Transform } from 'node:stream';
import { AppError } from '../../errors.js';
import { makeStream, madeHeaders, passSource, type Delivery, type MadeBounds, type Sink } from '../../media/stream-delivery.js';
import { streamRecipe } from '../../media/stream-recipe.js';
import type { GuardedHttpClient } from '../../net/guarded-client.js';
import { contentDisposition } from './content-disposition.js';
import type { StreamLimits } from './stream-limits.js';
import type { StreamRepository } from './stream.repository.js';
import type { StreamGrant, StreamTokens } from './stream-token.js';

/** A stream request as the door saw it. */
export interface StreamRequest {
  token: string;
  /** Only the headers, not the media (no place taken, no ffmpeg started). */
  head: boolean;
  /** The caller's byte range, passed on to a source sent as it is. */
  range: string | null;
  /** Aborted when the caller leaves before the answer begins: its ffmpeg and upstream stop at once. */
  signal: AbortSignal;
}

export interface StreamServiceDeps {
  tokens: StreamTokens;
  repository: StreamRepository;
  limits: StreamLimits;
  client: GuardedHttpClient;
  bounds: MadeBounds;
  /** Told of every chunk sent to a caller (the bytes counter of /metrics). */
  onBytes: (n: number) => void;
  log: { warn(obj: object, msg: string): void };
}

/**
 * Serves a parse's stream URLs (CONTRACT.md, Streams): opens the sealed token, checks the key and the
 * membership again, takes a place in the bounds, and has the source sent through (media/stream-delivery.ts)
 * into a body that counts and caps its bytes. Whatever ends the stream (the end, the caller leaving,
 * a failure, a cap) stops ffmpeg and the upstream requests at once and gives the places back.
 */
export class StreamService {
  constructor(private readonly deps: StreamServiceDeps) {}

  async open(request: StreamRequest): Promise<Delivery> {
    const grant = this.deps.tokens.open(request.token);
    if (!grant) throw new AppError('NOT_FOUND', 'No such stream.');
    if (Date.now() >= grant.expiresAt) throw new AppError('STREAM_EXPIRED');
    const standing = await this.deps.repository.standing(grant.jobId, grant.accountId, grant.apiKeyId);
    if (!standing.jobKnown) throw new AppError('NOT_FOUND', 'No such stream.');
    if (standing.keyRevoked) throw new AppError('UNAUTHENTICATED');
    if (grant.membership && !standing.member) throw new AppError('MEMBERSHIP_REQUIRED');
    const { client, bounds, limits } = this.deps;
    const passing = grant.processing === 'pass' && !grant.sources[0].manifest;
    const recipe = passing ? null : streamRecipe(grant.processing, grant.sources, grant.kind);
    const disposition = contentDisposition(grant.title, recipe ? recipe.extension : extensionOf(grant.sources[0].url));
    const pass = { range: request.range, signal: request.signal, timeoutMs: bounds.maxMs, disposition };
    if (request.head) {
      if (!recipe) return passSource(client, grant.sources[0], { ...pass, head: true }, null);
      return { status: 200, headers: madeHeaders(recipe, disposition), body: null };
    }
    const releaseAccount = limits.takeAccount(grant.accountId);
    try {
      if (!recipe) {
        const delivered = await passSource(client, grant.sources[0], { ...pass, head: false }, this.sink(grant, releaseAccount));
        if (!delivered.body) releaseAccount();
        return delivered;
      }
      const releaseFfmpeg = limits.takeFfmpeg();
      const onFailure = (why: object) => this.deps.log.warn({ jobId: grant.jobId, ...why }, 'stream failed');
      return await makeStream(
        client,
        grant.sources,
        recipe,
        { bounds, signal: request.signal, disposition, onFailure },
        this.sink(grant, releaseAccount),
        releaseFfmpeg,
      );
    } catch (err) {
      releaseAccount();
      throw err;
    }
  }

  /**
   * The body sent to the caller: counts its bytes (metrics; the job when it ends), cuts it past
   * STREAM_MAX_BYTES, and gives its places back and stops its feeders once, whichever way it ends.
   */
  private sink(grant: StreamGrant, release: () => void): Sink {
    return (stop) => {
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
        release();
        this.deps.repository.addStreamedBytes(grant.jobId, Math.min(sent, maxBytes)).catch((err: unknown) => {
          this.deps.log.warn({ err, jobId: grant.jobId }, 'could not count a stream’s bytes on its job');
        });
      });
      return body;
    };
  }
}

/** The file name's extension a source's URL shows, if any. */
function extensionOf(url: string): string | null {
  const m = /\.([a-z0-9]{2,5})$/i.exec(URL.parse(url)?.pathname ?? '');
  return m ? m[1].toLowerCase() : null;
}
