import { createHash, randomUUID } from 'node:crypto';
import { jest } from '@jest/globals';
import { createHarness, type Harness } from '../support/harness.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { TEST_DATABASES } from '../support/test-database.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { GqlRefusal } from '../support/bodies.js';

// Several gateways start here, each with its database, while other jest workers share the cores.
jest.setTimeout(120_000);

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const persisted = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });

/** POST /graphql with a key; `body` as sent. */
const post = (h: Harness, key: string, body: unknown, headers: Record<string, string> = {}) =>
  h.request('POST', '/graphql', {
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
/** GET /graphql with a key and these query parameters (objects sent as JSON). */
const get = (h: Harness, key: string, params: Record<string, unknown>) =>
  h.request(
    'GET',
    `/graphql?${new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]))}`,
    {
      headers: { authorization: `Bearer ${key}` },
    },
  );

/** A document no earlier request registered (its text, so its hash, is new). */
const fresh = (selection = 'id') => `query Fresh { me { ${selection} } } # ${randomUUID()}`;

const NOT_FOUND = { message: 'PersistedQueryNotFound', extensions: { code: 'INVALID_INPUT', details: { persistedQuery: 'NOT_FOUND' } } };

describe.each(TEST_DATABASES)('Apollo Server at /graphql (%s database)', (database) => {
  let h: Harness;
  let key: string;
  let accountId: string;
  beforeAll(async () => {
    h = await createHarness({}, undefined, { database });
    ({ key, accountId } = await h.account({ credits: 3 }));
  });
  afterAll(() => h?.close());

  describe('automatic persisted queries', () => {
    it('over POST: an unknown hash is 400 PersistedQueryNotFound, the text with its hash registers it, then the hash alone runs it', async () => {
      const query = fresh();
      const hash = sha256(query);
      const unknown = await post(h, key, { extensions: persisted(hash) });
      expect([unknown.statusCode, unknown.headers['cache-control'], unknown.json()]).toEqual([400, 'no-store', { errors: [NOT_FOUND] }]);
      const registered = await post(h, key, { query, extensions: persisted(hash) });
      expect([registered.statusCode, registered.json()]).toEqual([200, { data: { me: { id: accountId } } }]);
      const byHash = await post(h, key, { extensions: persisted(hash) });
      expect([byHash.statusCode, byHash.json()]).toEqual([200, { data: { me: { id: accountId } } }]);
    });

    it('over GET for queries, with variables; a mutation by hash over GET is 405', async () => {
      const query = `query Page($n: Int) { jobs(first: $n) { edges { cursor } } } # ${randomUUID()}`;
      const hash = sha256(query);
      expect((await get(h, key, { extensions: persisted(hash), variables: { n: 1 } })).json()).toEqual({ errors: [NOT_FOUND] });
      expect((await get(h, key, { query, extensions: persisted(hash), variables: { n: 1 } })).statusCode).toBe(200);
      const byHash = await get(h, key, { extensions: persisted(hash), variables: { n: 1 } });
      expect([byHash.statusCode, byHash.json()]).toEqual([200, { data: { jobs: { edges: [] } } }]);

      const mutation = `mutation { revokeApiKey(id: "00000000-0000-4000-8000-000000000000") { id } } # ${randomUUID()}`;
      expect(
        (await post(h, key, { query: mutation, extensions: persisted(sha256(mutation)) })).json<GqlRefusal>().errors[0].extensions.code,
      ).toBe('NOT_FOUND');
      const overGet = await get(h, key, { extensions: persisted(sha256(mutation)) });
      expect([overGet.statusCode, overGet.headers.allow, overGet.json<GqlRefusal>().errors[0].extensions.code]).toEqual([
        405,
        'POST',
        'INVALID_INPUT',
      ]);
    });

    it('refuses a text that is not its hash’s, and registers nothing that cannot run', async () => {
      const query = fresh();
      const wrong = await post(h, key, { query, extensions: persisted(sha256(`${query} `)) });
      expect([wrong.statusCode, wrong.json<GqlRefusal>().errors[0]]).toEqual([
        400,
        { message: 'provided sha does not match query', extensions: { code: 'INVALID_INPUT' } },
      ]);
      const invalid = fresh('nope');
      expect((await post(h, key, { query: invalid, extensions: persisted(sha256(invalid)) })).statusCode).toBe(400);
      expect((await post(h, key, { extensions: persisted(sha256(invalid)) })).json()).toEqual({ errors: [NOT_FOUND] });
    });

    it('keeps no long text: a document past 16 KiB (comments and padding aside) runs but is not registered', async () => {
      const query = `query Long${'x'.repeat(17 * 1024)}${randomUUID().replaceAll('-', '')} { me { id } }`;
      expect((await post(h, key, { query, extensions: persisted(sha256(query)) })).json()).toEqual({ data: { me: { id: accountId } } });
      expect((await post(h, key, { extensions: persisted(sha256(query)) })).json()).toEqual({ errors: [NOT_FOUND] });
    });
  });

  it('CSRF: runs what a browser preflights (a key, the account area’s token) and refuses what another site’s form could send', async () => {
    expect((await post(h, key, { query: '{ me { id } }' })).json()).toEqual({ data: { me: { id: accountId } } });
    const mutation = 'mutation { createApiKey(name: "forged") { key } }';
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const res = await h.request('POST', '/graphql', {
        headers: { 'content-type': type, authorization: `Bearer ${key}` },
        body: JSON.stringify({ query: mutation }),
      });
      expect([type, res.statusCode]).toEqual([type, 415]);
    }
    // A mutation over GET (a link, an <img>) is 405, whatever credential came with it.
    expect((await get(h, key, { query: mutation })).statusCode).toBe(405);
    expect(await h.services.apiKeys.list(OPERATOR, accountId)).toHaveLength(1);
  });

  it('answers HEAD with 405, naming GET and POST', async () => {
    const res = await h.request('HEAD', '/graphql', { headers: { authorization: `Bearer ${key}` } });
    expect([res.statusCode, res.headers.allow, res.body]).toEqual([405, 'GET, POST', '']);
  });

  it('counts each operation in a histogram on /metrics: a bounded name, its type, its outcome', async () => {
    await post(h, key, { query: 'query Mine { me { id } }' });
    await post(h, key, { query: '{ me { id } }' });
    await post(h, key, { query: 'mutation Parse { parse(input: { url: "http://10.0.0.1/x" }) { id } }' });
    await post(h, key, { query: '{ me { nope } }' });
    const metrics = (await h.request('GET', '/metrics')).body;
    const count = (labels: string) =>
      Number(new RegExp(`mediagate_graphql_operation_duration_seconds_count\\{${labels}\\} (\\d+)`).exec(metrics)?.[1] ?? 0);
    // A name the caller chose is `other` (no manifest names it here); unnamed is `anonymous`.
    expect(count('operation="other",type="query",outcome="OK"')).toBeGreaterThanOrEqual(1);
    expect(count('operation="anonymous",type="query",outcome="OK"')).toBeGreaterThanOrEqual(1);
    expect(count('operation="other",type="mutation",outcome="URL_NOT_ALLOWED"')).toBe(1);
    // No operation at all (it did not validate): neither name nor type.
    expect(count('operation="other",type="none",outcome="INVALID_INPUT"')).toBeGreaterThanOrEqual(1);
    expect(metrics).not.toContain('operation="Mine"');
  });
});

/**
 * Two gateways on one persisted queries' Redis (GRAPHQL_APQ_REDIS_URL, a redis-server of this test's
 * own): a hash registered through one is run by hash alone through the other. Without it, each
 * instance keeps its own.
 */
describe('automatic persisted queries shared through Redis', () => {
  let apq: TestRedis;
  const gateways: Harness[] = [];
  beforeAll(async () => {
    apq = await startRedis(['--maxmemory', '8mb', '--maxmemory-policy', 'allkeys-lru']);
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    await apq?.stop();
  });

  it('registers a hash through one instance and runs it by hash alone through another, each entry expiring', async () => {
    const [a, b] = [
      await createHarness({ GRAPHQL_APQ_REDIS_URL: apq.url, GRAPHQL_APQ_TTL_SECONDS: '600' }),
      await createHarness({ GRAPHQL_APQ_REDIS_URL: apq.url }),
    ];
    gateways.push(a, b);
    const [ka, kb] = [await a.account(), await b.account()];
    const query = fresh();
    const hash = sha256(query);
    expect((await post(a, ka.key, { query, extensions: persisted(hash) })).json()).toEqual({ data: { me: { id: ka.accountId } } });
    const elsewhere = await post(b, kb.key, { extensions: persisted(hash) });
    expect([elsewhere.statusCode, elsewhere.json()]).toEqual([200, { data: { me: { id: kb.accountId } } }]);
    // Stored under its hash, stripped of its comment, after the MAC that vouches for it, with the registering instance's time to live.
    expect(await apq.client.get(`mediagate:apq:${hash}`)).toMatch(/^[0-9a-f]{64}:query Fresh\{me\{id\}\}$/);
    const ttl = await apq.client.ttl(`mediagate:apq:${hash}`);
    expect(ttl).toBeGreaterThan(590);
    expect(ttl).toBeLessThanOrEqual(600);
    // A text put in Redis under another document's hash is never run in its name, nor one whose MAC is another's.
    const other = fresh();
    const stored = (await apq.client.get(`mediagate:apq:${hash}`)) as string;
    for (const planted of [
      'mutation { createApiKey(name: "planted") { key } }',
      `${stored.slice(0, 65)}mutation{createApiKey(name:"planted"){key}}`,
      stored,
    ]) {
      await apq.client.set(`mediagate:apq:${sha256(other)}`, planted);
      expect((await post(b, kb.key, { extensions: persisted(sha256(other)) })).json()).toEqual({ errors: [NOT_FOUND] });
    }
  });

  it('without it, a hash registered through one instance is unknown to another', async () => {
    const [a, b] = [await createHarness(), await createHarness()];
    gateways.push(a, b);
    const [ka, kb] = [await a.account(), await b.account()];
    const query = fresh();
    expect((await post(a, ka.key, { query, extensions: persisted(sha256(query)) })).statusCode).toBe(200);
    expect((await post(b, kb.key, { extensions: persisted(sha256(query)) })).json()).toEqual({ errors: [NOT_FOUND] });
  });
});
