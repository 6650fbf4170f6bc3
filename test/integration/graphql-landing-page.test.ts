import { createHarness, type Harness } from '../support/harness.js';

const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

describe('the GraphQL landing page', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('outside production: a browser gets a page that needs nothing from another origin', async () => {
    h = await createHarness({ PUBLIC_URL: 'https://gateway.example' });
    const res = await h.request('GET', '/graphql', { headers: browser });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('<title>mediagate GraphQL</title>');
    expect(res.body).toContain('https://gateway.example/graphql');
    // The schema with its descriptions, readable offline.
    expect(res.body).toContain('type Query {');
    expect(res.body).toContain('One of the caller’s jobs');
    // No script, no stylesheet, no picture, no frame: nothing to load, so nothing fails offline.
    expect(res.body).not.toMatch(/<(script|link|img|iframe)\b|\ssrc=/i);
    expect(res.body).toMatch(/<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'/);
    // A client that asks for JSON still gets GraphQL.
    const query = await h.request('GET', `/graphql?query=${encodeURIComponent('{ __typename }')}`, {
      headers: { accept: 'application/json' },
    });
    expect(query.statusCode).toBe(200);
    expect(query.json()).toEqual({ data: { __typename: 'Query' } });
  });

  it('in production (introspection off): no landing page', async () => {
    h = await createHarness({ NODE_ENV: 'production' });
    expect(h.config.graphql.introspection).toBe(false);
    const res = await h.request('GET', '/graphql', { headers: browser });
    expect(res.statusCode).not.toBe(200);
    expect(res.headers['content-type']).not.toMatch(/^text\/html/);
    expect(res.body).not.toContain('mediagate GraphQL');
  });
});
