import type { KeyValueCache } from '@apollo/utils.keyvaluecache';
import { stripIgnoredCharacters } from 'graphql';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { TrustedDocuments } from './persisted-documents.js';

/**
 * Longest document text registered, once stripped: a longer one still runs when sent, it is simply
 * sent whole each time. Only documents that passed validation and the operation limits are ever registered.
 */
export const MAX_APQ_CHARS = 16 * 1024;
/** Characters of text this process keeps in memory, over every registered document. */
const MAX_LOCAL_CHARS = 2 * 1024 * 1024;
/** Keys in the persisted queries' Redis (GRAPHQL_APQ_REDIS_URL). */
const REDIS_PREFIX = 'mediagate:apq:';
const MAC_HEX = 64;

interface Log {
  warn(obj: object, msg: string): void;
}

/** What a registration stores: the text stripped of comments and padding (graphql-js's stripIgnoredCharacters). */
export const storedText = (text: string) => stripIgnoredCharacters(text);

/**
 * Automatic persisted queries (APQ) as Apollo Server reads them (keys `apq:<sha256>`):
 * - the trusted documents first (persisted-documents.ts): they are known by hash from the start;
 * - then this process's memory, bounded by text size, each entry for `ttl` seconds;
 * - then, with GRAPHQL_APQ_REDIS_URL, a Redis of their own (a cache: it may evict them, never the
 *   rate-limit counters, which live on REDIS_URL's server), so a hash registered through one instance
 *   is found through every other. Redis down is a miss (the client sends the text again), never an
 *   error, and is logged once until it is back.
 * Apollo's own registration (`set`) is not used: registering needs the caller, whom a cache does not
 * see, so the registration plugin (apq-registration.plugin.ts) calls `register`. A text is stored
 * stripped of comments and padding, so it no longer hashes to its key: each stored text carries an
 * HMAC of its hash and itself under a key derived from the server's secret, and one read from Redis
 * without a valid one is never run in that hash's name.
 */
export class ApqCache implements KeyValueCache<string> {
  private readonly local: LRUCache<string, string>;
  private redisDown = false;

  constructor(
    private readonly trusted: TrustedDocuments,
    private readonly redis: Redis | null,
    private readonly ttlSeconds: number,
    /** The server's secret (API_KEY_PEPPER), shared by every instance. */
    secret: string,
    private readonly log: Log,
  ) {
    this.local = new LRUCache<string, string>({
      maxSize: MAX_LOCAL_CHARS,
      maxEntrySize: MAX_APQ_CHARS,
      sizeCalculation: (text) => Math.max(1, text.length),
      ttl: ttlSeconds * 1000,
    });
    this.macKey = createHmac('sha256', secret).update('mediagate persisted queries').digest();
  }

  private readonly macKey: Buffer;

  private mac(hash: string, text: string): string {
    return createHmac('sha256', this.macKey).update(`${hash}\n${text}`).digest('hex');
  }

  async get(key: string): Promise<string | undefined> {
    const hash = key.startsWith('apq:') ? key.slice(4) : key;
    const trusted = this.trusted.text(hash);
    if (trusted !== undefined) return trusted;
    const known = this.local.get(hash);
    if (known !== undefined || !this.redis) return known;
    try {
      const shared = await this.redis.get(REDIS_PREFIX + hash);
      this.up();
      if (shared === null || shared[MAC_HEX] !== ':') return undefined;
      const text = shared.slice(MAC_HEX + 1);
      const given = Buffer.from(shared.slice(0, MAC_HEX), 'hex');
      const expected = Buffer.from(this.mac(hash, text), 'hex');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      this.local.set(hash, text);
      return text;
    } catch (err) {
      this.down(err);
      return undefined;
    }
  }

  /** Whether a hash is known already (trusted, here, or shared): registering it again costs nothing. */
  async has(hash: string): Promise<boolean> {
    return (await this.get(hash)) !== undefined;
  }

  /**
   * Keeps a validated document's stripped text (storedText) under the hash of the text the client
   * sent, for `ttl`; a text longer than MAX_APQ_CHARS is not kept. Returns whether it was.
   */
  async register(hash: string, stripped: string): Promise<boolean> {
    if (stripped.length > MAX_APQ_CHARS || this.trusted.text(hash) !== undefined) return false;
    this.local.set(hash, stripped);
    if (!this.redis) return true;
    try {
      await this.redis.set(REDIS_PREFIX + hash, `${this.mac(hash, stripped)}:${stripped}`, 'EX', this.ttlSeconds);
      this.up();
    } catch (err) {
      this.down(err);
    }
    return true;
  }

  /** Apollo's registration, unused: see the class's comment. */
  async set(): Promise<void> {}

  async delete(key: string): Promise<boolean> {
    const hash = key.startsWith('apq:') ? key.slice(4) : key;
    const had = this.local.delete(hash);
    await this.redis?.del(REDIS_PREFIX + hash).catch((err: unknown) => this.down(err));
    return had;
  }

  private down(err: unknown): void {
    if (this.redisDown) return;
    this.redisDown = true;
    this.log.warn({ err }, 'the persisted queries’ Redis is unreachable: they are kept per process until it is back');
  }

  private up(): void {
    this.redisDown = false;
  }
}
