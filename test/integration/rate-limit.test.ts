import { createHarness, type Harness } from '../support/harness.js';

describe('rate limits', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_IP_PER_MINUTE: '1000' });
  });
  afterAll(() => h.close());

  it('limits each key across both doors with 429, Retry-After and RateLimit headers', async () => {
    const { key } = await h.account();
    const me = () => h.request('POST', '/graphql', { headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ query: '{ me { id } }' }) });
    const first = await me();
    expect(first.statusCode).toBe(200);
    expect(first.headers['ratelimit']).toBe('limit=3, remaining=2, reset=60');
    expect(first.headers['ratelimit-policy']).toBe('3;w=60');
    await me();
    const third = await h.rest('/api/parse', { url: 'not a url' }, key);
    expect(third.statusCode).toBe(400);
    const fourth = await h.rest('/api/parse', { url: 'https://video.example/x' }, key);
    expect(fourth.statusCode).toBe(429);
    expect(fourth.json().error).toMatchObject({ code: 'RATE_LIMITED', details: { limit: 3, windowSeconds: 60 } });
    expect(Number(fourth.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(fourth.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(fourth.headers['ratelimit']).toMatch(/^limit=3, remaining=0, reset=\d+$/);
    // Another key has its own budget.
    const other = await h.account();
    expect((await h.rest('/api/parse', { url: 'not a url' }, other.key)).statusCode).toBe(400);
  });

  it('limits each client address before authentication, but never the probes', async () => {
    const strict = await createHarness({ RATE_LIMIT_IP_PER_MINUTE: '2' });
    try {
      expect((await strict.rest('/api/parse', {}, null)).statusCode).toBe(401);
      expect((await strict.rest('/api/parse', {}, null)).statusCode).toBe(401);
      const limited = await strict.rest('/api/parse', {}, null);
      expect(limited.statusCode).toBe(429);
      expect(limited.json().error.code).toBe('RATE_LIMITED');
      expect((await strict.request('GET', '/healthz')).statusCode).toBe(200);
    } finally {
      await strict.close();
    }
  });
});
