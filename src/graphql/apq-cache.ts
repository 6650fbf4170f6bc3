import type { KeyValueCache, KeyValueCacheSetOptions } from '@apollo/utils.keyvaluecache';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { sha256Hex, type TrustedDocuments } from './persisted-documents.js';

/**
 * Longest document text registered: a longer one still runs when sent, it is simply sent whole each
 * time. Only documents that passed validation and the operation limits are ever registered.
 */
export const MAX_APQ_CHARS = 16 * 1024;
/** Characters of text this process keeps in memory, over every registered document. */
const MAX_LOCAL_CHARS = 2 * 1024 * 1024;
/** Keys in Redis: beside the rate limits' `mediagate:rl:`. */
const REDIS_PREFIX = 'mediagate:';

interface Log {
  warn(obj: object, msg: string): void;
}

/**
 * The cache of automatic persisted queries (APQ) as Apollo Server sees it (keys `apq:<sha256>`):
 * - the trusted documents first (persisted-documents.ts): they are known by hash from the start;
 * - then this process's memory, bounded by text size, each entry for `ttl` seconds;
 * - then, with REDIS_URL, Redis over the rate limits' connection, each key expiring after `ttl`,
 *   so a hash one instance registered is found through every other. A text read from Redis must
 *   hash to its key (nothing else is ever run in its name); Redis down is a miss (the client sends
 *   the text again), never an error, and is logged once until it is back.
 */
export class ApqCache implements KeyValueCache<string> {
  private readonly local: LRUCache<string, string>;
  private redisDown = false;

  constructor(
    private readonly trusted: TrustedDocuments,
    private readonly redis: Redis | null,
    private readonly ttlSeconds: number,
    private readonly log: Log,
  ) {
    this.local = new LRUCache<string, string>({
      maxSize: MAX_LOCAL_CHARS,
      maxEntrySize: MAX_APQ_CHARS,
      sizeCalculation: (text) => Math.max(1, text.length),
      ttl: ttlSeconds * 1000,
    });
  }

  async get(key: string): Promise<string | undefined> {
    const hash = key.startsWith('apq:') ? key.slice(4) : key;
    const trusted = this.trusted.text(hash);
    if (trusted !== undefined) return trusted;
    const known = this.local.get(key);
    if (known !== undefined || !this.redis) return known;
    try {
      const shared = await this.redis.get(REDIS_PREFIX + key);
      this.up();
      if (shared === null || sha256Hex(shared) !== hash) return undefined;
      this.local.set(key, shared);
      return shared;
    } catch (err) {
      this.down(err);
      return undefined;
    }
  }

  async set(key: string, text: string, options?: KeyValueCacheSetOptions): Promise<void> {
    if (text.length > MAX_APQ_CHARS) return;
    const ttl = options?.ttl ?? this.ttlSeconds;
    this.local.set(key, text, { ttl: ttl * 1000 });
    if (!this.redis) return;
    try {
      await this.redis.set(REDIS_PREFIX + key, text, 'EX', Math.max(1, Math.ceil(ttl)));
      this.up();
    } catch (err) {
      this.down(err);
    }
  }

  async delete(key: string): Promise<boolean> {
    const had = this.local.delete(key);
    await this.redis?.del(REDIS_PREFIX + key).catch((err: unknown) => this.down(err));
    return had;
  }

  private down(err: unknown): void {
    if (this.redisDown) return;
    this.redisDown = true;
    this.log.warn({ err }, 'Redis is unreachable: persisted queries are kept per process until it is back');
  }

  private up(): void {
    this.redisDown = false;
  }
}
