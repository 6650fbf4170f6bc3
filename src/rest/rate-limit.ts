import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { presentedKey } from '../modules/auth.js';

/** Paths that are never limited: probes and metrics. */
const EXEMPT = new Set(['/healthz', '/readyz', '/metrics']);

export interface RateLimits {
  close(): Promise<void>;
}

/**
 * Two fixed-window limits per minute: per client address before anything else, and per API key
 * (named by its public id, so the check needs no database). With REDIS_URL the counters are
 * shared by every instance; without it each process counts alone.
 */
export function registerRateLimits(app: FastifyInstance, config: Config): RateLimits {
  const redis = config.redisUrl ? new Redis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false }) : null;
  const watch = redis ? watchRedis(redis, app.log) : null;
  const make = (prefix: string, points: number): RateLimiterAbstract =>
    redis
      ? new RateLimiterRedis({
          storeClient: redis,
          keyPrefix: `mediagate:rl:${prefix}`,
          points,
          duration: 60,
          // If Redis is down, limit in memory rather than refusing everyone or no one.
          insuranceLimiter: new RateLimiterMemory({ points, duration: 60 }),
        })
      : new RateLimiterMemory({ keyPrefix: prefix, points, duration: 60 });
  const byIp = make('ip', config.rateLimits.perIpPerMinute);
  const byKey = make('key', config.rateLimits.perKeyPerMinute);

  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    if (EXEMPT.has(req.url.split('?')[0])) return;
    await consume(byIp, req.ip, config.rateLimits.perIpPerMinute, reply);
    const key = presentedKey(req);
    if (key) await consume(byKey, key.publicId, config.rateLimits.perKeyPerMinute, reply);
  });

  return {
    async close() {
      watch?.stop();
      redis?.disconnect();
    },
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

/** Takes one point; sets the RateLimit headers (IETF draft) either way; 429 with Retry-After when none is left. */
async function consume(limiter: RateLimiterAbstract, id: string, limit: number, reply: FastifyReply): Promise<void> {
  try {
    const res = await limiter.consume(id);
    setHeaders(reply, limit, res);
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    setHeaders(reply, limit, rejection);
    const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
    reply.header('retry-after', String(retryAfter));
    throw new AppError('RATE_LIMITED', `Too many requests; retry in ${retryAfter} s.`, { retryAfterSeconds: retryAfter, limit, windowSeconds: 60 });
  }
}

function setHeaders(reply: FastifyReply, limit: number, res: RateLimiterRes): void {
  const reset = Math.max(0, Math.ceil(res.msBeforeNext / 1000));
  // The most restrictive limit seen for this request is the one reported.
  const remaining = Math.max(0, res.remainingPoints);
  const current = Number(/remaining=(\d+)/.exec(String(reply.getHeader('ratelimit') ?? ''))?.[1] ?? Infinity);
  if (remaining > current) return;
  reply.header('ratelimit-policy', `${limit};w=60`);
  reply.header('ratelimit', `limit=${limit}, remaining=${remaining}, reset=${reset}`);
}
