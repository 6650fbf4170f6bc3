import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { presentedKey, principalOf, sessionIdFrom } from './credentials.js';
import type { Authenticator } from '../modules/auth.js';

/** Paths that are never limited: probes and metrics. */
const EXEMPT = new Set(['/healthz', '/readyz', '/metrics']);
const WINDOW_SECONDS = 60;

/** What taking one point said: the bucket's limit, what is left, when it refills, and the refusal when nothing was left. */
export interface Count {
  limit: number;
  remaining: number;
  resetSeconds: number;
  /** RATE_LIMITED (details: retryAfterSeconds, limit, windowSeconds); null when the point was taken. */
  refused: AppError | null;
}

/** The buckets, shared by both doors (HTTP hooks here, the WebSocket door at its upgrade and each subscribe). */
export interface RateLimits {
  /** One point of a client address's bucket: every request, before anything else. */
  byAddress(address: string): Promise<Count>;
  /** One point of an authenticated caller's bucket: an API key's id (or, on the WebSocket, a signed-in account's id). */
  byCaller(id: string): Promise<Count>;
  /** One point of an account's bucket, whatever credential proved it: all its keys, sessions and OpenID Connect tokens together. */
  byAccount(accountId: string): Promise<Count>;
  /**
   * A bucket of its own for a quota (`points` per `windowSeconds`, counted with the rate limits, where
   * nothing evicts them): each call takes `cost` points of an id's bucket.
   */
  quota(prefix: string, points: number, windowSeconds: number): (id: string, cost: number) => Promise<Count>;
  /** The Redis connection (REDIS_URL), for other state shared between instances; null without it. */
  redis: Redis | null;
  close(): Promise<void>;
}

/**
 * Three fixed-window limits per minute: per client address before anything else (req.ip: the
 * connection's peer, or the client named by trusted proxies, TRUST_PROXY); per API key once the
 * key is proven (its secret checked), so that knowing a key's public id is not enough to use up its
 * budget; and per account once any credential is proven (a key, the account area's session, an
 * OpenID Connect token), so that many keys or sign-ins do not multiply an account's budget. A request
 * whose credential fails counts against its address only. With REDIS_URL the counters are shared by
 * every instance; without it each process counts alone.
 */
export function registerRateLimits(app: FastifyInstance, config: Config, auth: Authenticator): RateLimits {
  const redis = config.redisUrl
    ? new Redis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false })
    : null;
  const watch = redis ? watchRedis(redis, app.log) : null;
  const make = (prefix: string, points: number, duration = WINDOW_SECONDS): RateLimiterAbstract =>
    redis
      ? new RateLimiterRedis({
          storeClient: redis,
          keyPrefix: `mediagate:rl:${prefix}`,
          points,
          duration,
          // If Redis is down, limit in memory rather than refusing everyone or no one.
          insuranceLimiter: new RateLimiterMemory({ points, duration }),
        })
      : new RateLimiterMemory({ keyPrefix: prefix, points, duration });
  const byIp = make('ip', config.rateLimits.perIpPerMinute);
  const byKey = make('key', config.rateLimits.perKeyPerMinute);
  const byAccount = make('account', config.rateLimits.perAccountPerMinute);
  const limits: RateLimits = {
    byAddress: (address) => take(byIp, address, config.rateLimits.perIpPerMinute),
    byCaller: (id) => take(byKey, id, config.rateLimits.perKeyPerMinute),
    byAccount: (accountId) => take(byAccount, accountId, config.rateLimits.perAccountPerMinute),
    quota(prefix, points, windowSeconds) {
      const limiter = make(prefix, points, windowSeconds);
      return (id, cost) => take(limiter, id, points, cost, windowSeconds);
    },
    redis,
    async close() {
      watch?.stop();
      redis?.disconnect();
    },
  };

  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    if (EXEMPT.has(req.url.split('?')[0])) return;
    answer(reply, await limits.byAddress(req.ip));
    if (!presentedKey(req) && !otherCredential(req)) return;
    // A credential that fails is the handler's 401, from this same authentication.
    const principal = await principalOf(auth, req).catch(() => null);
    if (!principal) return;
    if (principal.apiKeyId) answer(reply, await limits.byCaller(principal.apiKeyId));
    answer(reply, await limits.byAccount(principal.accountId));
  });

  /**
   * A credential other than an API key that the doors will authenticate anyway (an OpenID Connect
   * token, the account area's cookie): only on the doors, so the account page's own files and the
   * stream URLs (which need no credential) cost no session lookup.
   */
  function otherCredential(req: FastifyRequest): boolean {
    const path = req.url.split('?')[0];
    if (!(path === '/graphql' || (path.startsWith('/api/') && !path.startsWith('/api/streams/')))) return false;
    if (req.headers.authorization) return true;
    const cookie = auth.sessionCookieName;
    return !!cookie && !!sessionIdFrom(req.headers.cookie, cookie);
  }

  return limits;
}

/** The RateLimit headers (IETF draft) of a count, and Retry-After when it was refused. */
export function rateLimitHeaders(count: Count): Record<string, string> {
  return {
    'ratelimit-policy': `${count.limit};w=${WINDOW_SECONDS}`,
    ratelimit: `limit=${count.limit}, remaining=${count.remaining}, reset=${count.resetSeconds}`,
    ...(count.refused ? { 'retry-after': String(count.refused.details!.retryAfterSeconds) } : {}),
  };
}

/**
 * Says once when Redis goes away (the limiters then count in this process: their insurance) and
 * once when it is back (ioredis keeps reconnecting meanwhile, and the limiters use it again), rather
 * than a line for every failed command or reconnection attempt.
 */
function watchRedis(redis: Redis, log: FastifyBaseLogger): { stop(): void } {
  let down = false;
  let stopped = false;
  const lost = (err?: Error) => {
    if (down || stopped) return;
    down = true;
    log.warn({ err }, 'Redis is unreachable: rate limits are counted per process until it is back');
  };
  redis.on('error', lost);
  redis.on('close', () => lost());
  redis.on('ready', () => {
    if (!down || stopped) return;
    down = false;
    log.info('Redis is reachable again: rate limits are shared between instances again');
  });
  return { stop: () => void (stopped = true) };
}

/** Takes one point (or `cost`); a bucket with too few left is a refusal, never an exception. */
async function take(limiter: RateLimiterAbstract, id: string, limit: number, cost = 1, windowSeconds = WINDOW_SECONDS): Promise<Count> {
  let res: RateLimiterRes;
  let refused = false;
  try {
    res = await limiter.consume(id, cost);
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    res = rejection;
    refused = true;
  }
  const count = { limit, remaining: Math.max(0, res.remainingPoints), resetSeconds: Math.max(0, Math.ceil(res.msBeforeNext / 1000)) };
  if (!refused) return { ...count, refused: null };
  const retryAfter = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  return {
    ...count,
    refused: new AppError('RATE_LIMITED', `Too many requests; retry in ${retryAfter} s.`, {
      retryAfterSeconds: retryAfter,
      limit,
      windowSeconds,
    }),
  };
}

/** Sets the headers of the most restrictive count seen for this request; throws the refusal, if any. */
function answer(reply: FastifyReply, count: Count): void {
  const current = Number(/remaining=(\d+)/.exec(String(reply.getHeader('ratelimit') ?? ''))?.[1] ?? Infinity);
  if (count.refused || count.remaining <= current) reply.headers(rateLimitHeaders(count));
  if (count.refused) throw count.refused;
}
