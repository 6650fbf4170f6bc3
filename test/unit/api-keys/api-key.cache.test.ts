import type { Notifications } from '../../../src/db/notifications.js';
import { ApiKeyCache, type KeyRecord } from '../../../src/modules/api-keys/api-key.cache.js';

/** Notifications that are listening and never deliver anything: only the cache's own clock drops entries. */
const listening = { on: () => () => {}, onReconnect: () => () => {}, recheckMs: 30_000 } as unknown as Notifications;

const record = (i: number): KeyRecord => ({
  keyId: `key-${i}`,
  accountId: `account-${i}`,
  secretHash: Buffer.alloc(32),
  scopes: new Set(['parse']),
  roles: new Set(),
  membershipActive: true,
  periodEnd: null,
  revoked: false,
  touchedAt: 0,
});

describe('the API-key cache', () => {
  it('lets keys cached in the same moment expire over the last quarter of API_KEY_CACHE_SECONDS, never past it', async () => {
    // Not 0: lru-cache takes a start of 0 for "no TTL".
    const t0 = 1_000;
    let now = t0;
    const cache = new ApiKeyCache(20_000, listening, { now: () => now });
    const keys = Array.from({ length: 400 }, (_, i) => `pub${i}`);
    keys.forEach((k, i) => cache.store(k, record(i), cache.mark()));
    // lru-cache reads its clock at most once a millisecond (ttlResolution): a real one passes first.
    const cached = async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return keys.filter((k) => cache.get(k)).length;
    };

    now = t0 + 14_999;
    expect(await cached()).toBe(400);
    // Between 15 s and 20 s they leave a few at a time, not all at once.
    const left: number[] = [];
    for (now = t0 + 16_000; now <= t0 + 19_000; now += 1_000) left.push(await cached());
    expect(left[0]).toBeLessThan(400);
    expect(left.at(-1)).toBeGreaterThan(0);
    for (let i = 1; i < left.length; i++) expect(left[i]).toBeLessThan(left[i - 1]);
    now = t0 + 20_001;
    expect(await cached()).toBe(0);
  });
});
