import { createHash, randomUUID } from 'node:crypto';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { jest } from '@jest/globals';
import { createHarness, type Harness } from '../support/harness.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { TEST_DATABASES } from '../support/test-database.js';
import type { GqlRefusal } from '../support/bodies.js';

// Gateways and redis-servers of their own, while other jest workers share the cores.
jest.setTimeout(180_000);

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const persisted = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });
const NOT_FOUND = { message: 'PersistedQueryNotFound', extensions: { code: 'INVALID_INPUT', details: { persistedQuery: 'NOT_FOUND' } } };
/** A name no earlier request used (a document's text, so its hash, is new), `size` characters long. */
const name = (size = 8) => `Q${randomUUID().replaceAll('-', '')}${'x'.repeat(Math.max(0, size - 33))}`;

/** POST /graphql as Apollo Client's persisted query link sends it: the hash, and the text with it once the hash is unknown. */
const post = (h: Harness, key: string | null, body: unknown) =>
  h.request('POST', '/graphql', {
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
const register = (h: Harness, key: string | null, query: string) => post(h, key, { query, extensions: persisted(sha256(query)) });
const byHash = (h: Harness, key: string | null, query: string) => post(h, key, { extensions: persisted(sha256(query)) });

describe.each(TEST_DATABASES)('who registers persisted queries, and how much (%s database)', (database) => {
  let h: Harness;
  let apq: TestRedis;
  beforeAll(async () => {
    apq = await startRedis(['--maxmemory', '8mb', '--maxmemory-policy', 'allkeys-lru']);
    h = await createHarness(
      { GRAPHQL_APQ_REDIS_URL: apq.url, GRAPHQL_APQ_REGISTRATIONS_PER_DAY: '3', GRAPHQL_APQ_BYTES_PER_DAY: '4000' },
      undefined,
      { database },
    );
  });
  afterAll(async () => {
    await h?.close();
    await apq?.stop();
  });
  const stored = (query: string) => apq.client.get(`mediagate:apq:${sha256(query)}`);

  it('runs an anonymous caller’s text but never stores it: its hash stays unknown', async () => {
    const { key } = await h.account();
    const query = `query ${name()} { __typename }`;
    expect((await byHash(h, null, query)).json()).toEqual({ errors: [NOT_FOUND] });
    const sent = await register(h, null, query);
    expect([sent.statusCode, sent.json()]).toEqual([200, { data: { __typename: 'Query' } }]);
    // A key that is not one registers nothing either.
    expect((await register(h, 'mg_live_nope', query)).statusCode).toBe(200);
    for (const caller of [null, key]) expect((await byHash(h, caller, query)).json()).toEqual({ errors: [NOT_FOUND] });
    expect(await stored(query)).toBeNull();
  });

  it('answers an anonymous Apollo Client (PersistedQueryLink) all the same: the hash, then the text, every time', async () => {
    const withText: boolean[] = [];
    const http = new HttpLink({
      uri: `${h.url}/graphql`,
      fetch: (input, init) => {
        withText.push(String(init?.body ?? '').includes('"query"'));
        return fetch(input, init);
      },
    });
    const client = new ApolloClient({
      link: new PersistedQueryLink({ sha256 }).concat(http),
      cache: new InMemoryCache(),
      defaultOptions: { query: { fetchPolicy: 'no-cache' } },
    });
    const document = gql(`query ${name()} { __typename }`);
    for (let i = 0; i < 2; i++) expect((await client.query({ query: document })).data).toEqual({ __typename: 'Query' });
    expect(withText).toEqual([false, true, false, true]);
  });

  it('stores a document stripped of its comments and padding: 15 KiB of comment around { __typename } stores a few bytes', async () => {
    const { key } = await h.account();
    const query = `# ${'padding '.repeat(1920)}\nquery ${name()}   {\n\n    __typename   }\n# ${'more '.repeat(50)}`;
    expect(query.length).toBeGreaterThan(15 * 1024);
    expect((await register(h, key, query)).json()).toEqual({ data: { __typename: 'Query' } });
    const value = (await stored(query)) as string;
    expect(value.length).toBeLessThan(130);
    expect(value.slice(65)).toMatch(/^query Q\w+\{__typename\}$/);
    // Run by the hash of the text the client sent, through another gateway too.
    expect((await byHash(h, key, query)).json()).toEqual({ data: { __typename: 'Query' } });
  });

  it('refuses an account past its registrations for the day with 429 RATE_LIMITED, evicting nobody’s', async () => {
    const [{ key }, other] = [await h.account(), await h.account()];
    const documents = [1, 2, 3, 4].map(() => `query ${name()} { __typename }`);
    for (const query of documents.slice(0, 3)) expect((await register(h, key, query)).statusCode).toBe(200);
    // Sent again, a known document costs nothing.
    expect((await register(h, key, documents[0])).statusCode).toBe(200);
    const refused = await register(h, key, documents[3]);
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(86_000);
    expect(refused.json()).toEqual({
      errors: [
        {
          message: expect.stringMatching(
            /^This account has registered its quota of persisted queries for the day \(3 documents, 4000 bytes\)/,
          ),
          extensions: {
            code: 'RATE_LIMITED',
            details: { retryAfterSeconds: expect.any(Number), registrationsPerDay: 3, bytesPerDay: 4000, windowSeconds: 86400 },
          },
        },
      ],
    });
    expect((await byHash(h, key, documents[3])).json()).toEqual({ errors: [NOT_FOUND] });
    // The text alone still runs; the three registered still run by hash; another account registers its own.
    expect((await post(h, key, { query: documents[3] })).statusCode).toBe(200);
    for (const query of documents.slice(0, 3)) expect((await byHash(h, key, query)).statusCode).toBe(200);
    expect((await register(h, other.key, documents[3])).statusCode).toBe(200);
    expect((await byHash(h, key, documents[3])).statusCode).toBe(200);
  });

  it('refuses an account past its bytes for the day (counted stripped)', async () => {
    const { key } = await h.account();
    const long = () => `query ${name(3000)} { __typename }`;
    expect((await register(h, key, long())).statusCode).toBe(200);
    const refused = await register(h, key, long());
    expect([refused.statusCode, refused.json<GqlRefusal>().errors[0].extensions.code]).toEqual([429, 'RATE_LIMITED']);
  });
});

/**
 * The rate-limit counters on their own server (REDIS_URL: noeviction) and the persisted queries on
 * another (GRAPHQL_APQ_REDIS_URL: a cache, allkeys-lru), both small: a flood of registrations fills
 * the cache, which evicts its own entries, and every counter stays, new ones included.
 */
describe('a flood of persisted queries on small Redis servers', () => {
  let h: Harness;
  let counters: TestRedis;
  let apq: TestRedis;
  beforeAll(async () => {
    [counters, apq] = await Promise.all([
      startRedis(['--maxmemory', '2mb', '--maxmemory-policy', 'noeviction']),
      startRedis(['--maxmemory', '2mb', '--maxmemory-policy', 'allkeys-lru']),
    ]);
    h = await createHarness({
      REDIS_URL: counters.url,
      GRAPHQL_APQ_REDIS_URL: apq.url,
      RATE_LIMIT_PER_MINUTE: '100000',
      RATE_LIMIT_IP_PER_MINUTE: '100000',
      GRAPHQL_APQ_REGISTRATIONS_PER_DAY: '100000',
      GRAPHQL_APQ_BYTES_PER_DAY: '100000000',
    });
  });
  afterAll(async () => {
    await h?.close();
    await Promise.all([counters?.stop(), apq?.stop()]);
  });
  const counted = async (keyId: string) => Number(await counters.client.get(`mediagate:rl:key:${keyId}`));

  it('keeps every rate-limit counter, and counts new callers in Redis, after 3 MiB of registrations', async () => {
    const [before, flooder, after] = [await h.account(), await h.account(), await h.account()];
    expect((await post(h, before.key, { query: '{ __typename }' })).statusCode).toBe(200);
    expect(await counted(before.keyId)).toBe(1);
    const documents = Array.from({ length: 200 }, () => `query ${name(15 * 1024)} { __typename }`);
    for (let i = 0; i < documents.length; i += 8)
      for (const res of await Promise.all(documents.slice(i, i + 8).map((query) => register(h, flooder.key, query))))
        expect(res.statusCode).toBe(200);
    // Every counter stays, and a caller new since then is counted in Redis (not only in this process).
    expect(await counted(before.keyId)).toBe(1);
    expect(await counted(flooder.keyId)).toBe(200);
    expect((await post(h, after.key, { query: '{ __typename }' })).statusCode).toBe(200);
    expect(await counted(after.keyId)).toBe(1);
    expect(Number(/evicted_keys:(\d+)/.exec(await counters.client.info('stats'))?.[1])).toBe(0);
    // The cache made room by evicting its own entries; the last one registered is there.
    expect(Number(/evicted_keys:(\d+)/.exec(await apq.client.info('stats'))?.[1])).toBeGreaterThan(0);
    expect((await byHash(h, flooder.key, documents.at(-1) as string)).statusCode).toBe(200);
  });
});
