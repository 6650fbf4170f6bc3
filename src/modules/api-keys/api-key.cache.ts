import type { Notifications } from '../../db/notifications.js';
import { LRUCache, type Perf } from 'lru-cache';

/** What authenticating a key needs to know of it, as read from the database. */
export interface KeyRecord {
  keyId: string;
  accountId: string;
  secretHash: Buffer;
  scopes: ReadonlySet<string>;
  roles: ReadonlySet<string>;
  /** The membership's status is active (whether its period still runs is decided at each request). */
  membershipActive: boolean;
  /** When the membership's period ends (epoch milliseconds), if there is one. */
  periodEnd: number | null;
  revoked: boolean;
  /** When last_used_at was last written or seen (epoch milliseconds; 0: never). */
  touchedAt: number;
}

/** The clock entries age by (lru-cache's `perf`): a test moves it on rather than wait out a TTL. */
export const cacheClock: Perf = { now: () => performance.now() };

/** Keys cached at most; an evicted one is simply read again. */
const MAX_KEYS = 10_000;

/**
 * The API keys recently looked up, by public id. Whatever the database says changed about a key or
 * its account (`mediagate_auth`, sent by triggers on api_key, membership and account, so it comes
 * from the CLI and every other instance too) drops the entries concerned; when the listening
 * connection was lost, everything is dropped, since a notification may have been missed; and an
 * entry is never kept longer than `ttlMs` nor, while nothing listens, than the notifications'
 * short recheck time. The secret is still checked against the hash on every request, and a stale
 * entry can never spend: the statement that holds credits checks revocation itself.
 */
export class ApiKeyCache {
  private readonly keys: LRUCache<string, KeyRecord> | null;
  /** Counts invalidations: a lookup that began before one must not store what it read. */
  private generation = 0;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly ttlMs: number,
    private readonly notifications: Notifications,
    clock: Perf = cacheClock,
  ) {
    this.keys = ttlMs > 0 ? new LRUCache({ max: MAX_KEYS, ttl: ttlMs, perf: clock }) : null;
    if (!this.keys) return;
    this.unsubscribe.push(
      notifications.on('mediagate_auth', (change) => this.forget(change)),
      notifications.onReconnect(() => this.clear()),
    );
  }

  get enabled(): boolean {
    return this.keys !== null;
  }

  get(publicId: string): KeyRecord | undefined {
    return this.keys?.get(publicId);
  }

  /** A mark to hand to `store` after the lookup that starts now. */
  mark(): number {
    return this.generation;
  }

  /**
   * Keeps a record read after `mark`, unless something was invalidated meanwhile (it may predate that
   * change). Each entry lives between three quarters of the time allowed and all of it: the keys a
   * busy instance reads in its first second would otherwise all expire in one later second, and
   * be read again together (seen in `npm run bench` as a burst of lookups every 30 s).
   */
  store(publicId: string, record: KeyRecord, mark: number): void {
    if (!this.keys || mark !== this.generation) return;
    const ttl = Math.min(this.ttlMs, this.notifications.recheckMs);
    this.keys.set(publicId, record, { ttl: Math.max(1, Math.ceil(ttl * (1 - Math.random() / 4))) });
  }

  /** Drops the entries of a key, or of every key of an account. */
  forget(change: { apiKeyId?: string; accountId?: string }): void {
    this.generation++;
    if (!this.keys) return;
    const stale: string[] = [];
    for (const [publicId, record] of this.keys.entries()) {
      if (record.keyId === change.apiKeyId || record.accountId === change.accountId) stale.push(publicId);
    }
    stale.forEach((publicId) => this.keys!.delete(publicId));
  }

  clear(): void {
    this.generation++;
    this.keys?.clear();
  }

  close(): void {
    this.unsubscribe.forEach((off) => off());
    this.clear();
  }
}
