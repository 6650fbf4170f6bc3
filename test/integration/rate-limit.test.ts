import { forgedKey, publicIdOf } from '../support/forged-key.js';
import { createHarness, type Harness } from '../support/harness.js';
import type { ErrorBody, GqlRefusal } from '../support/bodies.js';

describe('rate limits', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_IP_PER_MINUTE: '1000' });
  });
  afterAll(() => h.close());

  it('limits each key across both doors with 429, Retry-After and RateLimit headers', async () => {
    const { key } = await h.account();
    const me = () =>
      h.request('POST', '/graphql', {
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query: '{ me { id } }' }),
      });
    const first = await me();
    expect(first.statusCode).toBe(200);
    expect(first.headers.ratelimit).toBe('limit=3, remaining=2, reset=60');
    expect(first.headers['ratelimit-policy']).toBe('3;w=60');
    await me();
    const third = await h.rest('/api/parse', { url: 'not a url' }, key);
    expect(third.statusCode).toBe(400);
    const fourth = await h.rest('/api/parse', { url: 'https://video.example/x' }, key);
    expect(fourth.statusCode).toBe(429);
    expect(fourth.json<ErrorBody>().error).toMatchObject({ code: 'RATE_LIMITED', details: { limit: 3, windowSeconds: 60 } });
    expect(Number(fourth.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(fourth.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(fourth.headers.ratelimit).toMatch(/^limit=3, remaining=0, reset=\d+$/);
    // Another key has its own budget.
    const other = await h.account();
    expect((await h.rest('/api/parse', { url: 'not a url' }, other.key)).statusCode).toBe(400);
  });

  it('limits each client address before authentication, but never the probes', async () => {
    const strict = await createHarness({ RATE_LIMIT_IP_PER_MINUTE: '2' }, undefined, { shareDatabaseOf: h });
    try {
      expect((await strict.rest('/api/parse', {}, null)).statusCode).toBe(401);
      expect((await strict.rest('/api/parse', {}, null)).statusCode).toBe(401);
      const limited = await strict.rest('/api/parse', {}, null);
      expect(limited.statusCode).toBe(429);
      expect(limited.json<ErrorBody>().error.code).toBe('RATE_LIMITED');
      expect((await strict.request('GET', '/healthz')).statusCode).toBe(200);
    } finally {
      await strict.close();
    }
  });

  it('counts a key’s request only once the key is proven: a stranger who knows its public id spends the address’s budget, not the key’s', async () => {
    const limited = await createHarness({ RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_IP_PER_MINUTE: '10' }, undefined, { shareDatabaseOf: h });
    try {
      const victim = await limited.account();
      const forged = forgedKey(publicIdOf(victim.key));
      for (let i = 1; i <= 5; i++) {
        const res = await limited.rest('/api/parse', { url: 'not a url' }, forged);
        expect(res.statusCode).toBe(401);
        expect(res.json<ErrorBody>().error.code).toBe('UNAUTHENTICATED');
        expect(res.headers.ratelimit).toBe(`limit=10, remaining=${10 - i}, reset=60`);
      }
      const gql = await limited.request('POST', '/graphql', {
        headers: { 'content-type': 'application/json', authorization: `Bearer ${forged}` },
        body: JSON.stringify({ query: '{ me { id } }' }),
      });
      expect(gql.json<GqlRefusal>().errors[0].extensions.code).toBe('UNAUTHENTICATED');
      expect(gql.headers.ratelimit).toBe('limit=10, remaining=4, reset=60');
      // The key's owner still has all three requests of the minute, over both doors.
      const first = await limited.rest('/api/parse', { url: 'not a url' }, victim.key);
      expect(first.statusCode).toBe(400);
      expect(first.headers.ratelimit).toBe('limit=3, remaining=2, reset=60');
      expect((await limited.gql<{ me: { id: string } }>('{ me { id } }', {}, victim.key)).data.me.id).toBe(victim.accountId);
      expect((await limited.rest('/api/parse', { url: 'not a url' }, victim.key)).statusCode).toBe(400);
      expect((await limited.rest('/api/parse', { url: 'not a url' }, victim.key)).statusCode).toBe(429);
    } finally {
      await limited.close();
    }
  });

  describe('behind a proxy (TRUST_PROXY)', () => {
    // Each configuration is an app of its own on the suite's database (its rate limits live in the app).
    let shared: Harness;
    beforeAll(() => {
      shared = h;
    });
    const parse = (h: Harness, forwardedFor: string) => h.rest('/api/parse', {}, null, { 'x-forwarded-for': forwardedFor });
    /** Two clients behind one proxy, two requests each, then one more from the first. */
    const twoClients = async (h: Harness) => {
      const codes = [];
      for (const client of ['203.0.113.1', '203.0.113.1', '203.0.113.2', '203.0.113.2', '203.0.113.1'])
        codes.push((await parse(h, client)).statusCode);
      return codes;
    };

    it.each([['1'], ['127.0.0.1'], ['loopback, 10.0.0.0/8']])(
      'with TRUST_PROXY=%s, counts each client named in X-Forwarded-For apart',
      async (trust) => {
        const h = await createHarness({ RATE_LIMIT_IP_PER_MINUTE: '2', TRUST_PROXY: trust }, undefined, { shareDatabaseOf: shared });
        try {
          expect(await twoClients(h)).toEqual([401, 401, 401, 401, 429]);
          // The client is the address the trusted proxy appended, not what the client wrote before it.
          expect((await parse(h, '198.51.100.9, 203.0.113.2')).statusCode).toBe(429);
        } finally {
          await h.close();
        }
      },
    );

    it.each([['unset'], ['10.0.0.0/8']])(
      'with TRUST_PROXY %s (the peer is no trusted proxy), ignores X-Forwarded-For: it cannot be forged to escape the limit',
      async (trust) => {
        const h = await createHarness({ RATE_LIMIT_IP_PER_MINUTE: '2', ...(trust === 'unset' ? {} : { TRUST_PROXY: trust }) }, undefined, {
          shareDatabaseOf: shared,
        });
        try {
          expect(await twoClients(h)).toEqual([401, 401, 429, 429, 429]);
        } finally {
          await h.close();
        }
      },
    );
  });
});
