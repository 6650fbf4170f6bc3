import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, type Harness } from '../support/harness.js';
import type { GqlBody } from '../support/bodies.js';

/** What a client learns from one operation, whichever door it came through. */
interface Outcome {
  /** The HTTP status; null over the WebSocket. */
  status: number | null;
  data?: unknown;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/**
 * The operation limits (graphql-armor for depth, aliases, directives and cost; graphql-js for tokens),
 * set low here so that valid operations reach them, through both doors: POST /graphql and graphql-ws.
 * The WebSocket serves subscriptions only, so what it serves is said as a jobUpdated subscription (on
 * a job that has ended: the job once, then complete); what it refuses is refused by the limits before
 * anything else, queries included.
 */
describe('GraphQL operation limits', () => {
  let h: Harness;
  let site: FakeSite;
  let key: string;
  let jobId: string;
  let ws: Client;
  beforeAll(async () => {
    site = await startFakeSite();
    site.page(
      '/v',
      `<html><head><meta property="og:video" content="${site.origin}/v.mp4"><meta property="og:video:type" content="video/mp4"></head></html>`,
    );
    h = await createHarness({
      FETCH_ALLOW_HOSTS: site.hostPort,
      GRAPHQL_MAX_DEPTH: '4',
      GRAPHQL_MAX_ALIASES: '2',
      GRAPHQL_MAX_DIRECTIVES: '2',
      GRAPHQL_MAX_COST: '100',
      GRAPHQL_MAX_TOKENS: '40',
    });
    ({ key } = await h.account());
    const parsed = await h.rest('/api/parse', { url: `${site.origin}/v` }, key);
    expect(parsed.statusCode).toBe(200);
    jobId = parsed.json<{ id: string }>().id;
    ws = createClient({
      url: `${h.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${key}` },
      retryAttempts: 0,
    });
  });
  afterAll(async () => {
    await ws.dispose();
    await h.close();
    await site.close();
  });

  const doors: Record<'HTTP' | 'WebSocket', (query: string) => Promise<Outcome>> = {
    HTTP: async (query) => {
      const res = await h.request('POST', '/graphql', {
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query }),
      });
      return { status: res.statusCode, ...res.json() };
    },
    // One result, then complete; a refused operation ends in `error`.
    WebSocket: (query) =>
      new Promise((resolve) => {
        let outcome: Outcome = { status: null };
        ws.subscribe(
          { query, variables: { id: jobId } },
          {
            next: (msg) => void (outcome = { status: null, data: msg.data, errors: msg.errors as Outcome['errors'] }),
            error: (errors) => resolve({ status: null, errors: errors as Outcome['errors'] }),
            complete: () => resolve(outcome),
          },
        );
      }),
  };

  it('refuses a query or mutation over the WebSocket, within the limits or not: those go over HTTP', async () => {
    const only = /^Only subscriptions are served over WebSocket; send queries and mutations over HTTP POST \/graphql\.$/;
    for (const query of ['{ me { id } }', 'mutation { createApiKey(name: "x") { key } }']) {
      const outcome = await doors.WebSocket(query);
      expect(outcome.data ?? null).toBeNull();
      expect(outcome.errors).toEqual([{ message: expect.stringMatching(only), extensions: { code: 'INVALID_INPUT' } }]);
    }
    // Nothing was made: the account still has its one key.
    expect((await h.gql<{ me: { apiKeys: { id: string }[] } }>('{ me { apiKeys { id } } }', {}, key)).data.me.apiKeys).toHaveLength(1);
  });

  /** An operation with these variables, through a door. */
  const withVariablesOver: Record<keyof typeof doors, (query: string, variables: Record<string, unknown>) => Promise<Outcome>> = {
    HTTP: async (query, variables) => {
      const res = await h.request('POST', '/graphql', {
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.statusCode, ...res.json() };
    },
    WebSocket: (query, variables) =>
      new Promise((resolve) =>
        ws.subscribe(
          { query, variables },
          {
            next: (msg) => resolve({ status: null, data: msg.data, errors: msg.errors as Outcome['errors'] }),
            error: (errors) => resolve({ status: null, errors: errors as Outcome['errors'] }),
            complete: () => resolve({ status: null }),
          },
        ),
      ),
  };
  const overGet = async (query: string, variables: Record<string, unknown>): Promise<Outcome> => {
    const res = await h.request('GET', `/graphql?${new URLSearchParams({ query, variables: JSON.stringify(variables) })}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    return { status: res.statusCode, ...res.json() };
  };

  describe.each(Object.keys(doors) as (keyof typeof doors)[])('over %s', (door) => {
    const run = (query: string) => doors[door](query);
    const withVariables = (query: string, variables: Record<string, unknown>) => withVariablesOver[door](query, variables);
    /** What the door serves: the HTTP door's query, or the same shape as a subscription on the socket. */
    const serves = (query: string, subscription: string) => run(door === 'HTTP' ? query : subscription);
    const job = (selection: string) => `subscription($id: ID!) { jobUpdated(id: $id) { ${selection} } }`;
    const expectRefused = (outcome: Outcome, message: RegExp) => {
      expect(outcome.data ?? null).toBeNull();
      expect(outcome.errors).toHaveLength(1);
      expect(outcome.errors?.[0]).toMatchObject({ extensions: { code: 'INVALID_INPUT' } });
      expect(outcome.errors?.[0].message).toMatch(message);
      if (door === 'HTTP') expect(outcome.status).toBe(400);
    };
    const expectServed = (outcome: Outcome) => {
      expect(outcome.errors).toBeUndefined();
      expect(outcome.data).toBeTruthy();
      if (door === 'HTTP') expect(outcome.status).toBe(200);
    };

    it('serves an operation at the depth limit and refuses one level more (fragments count as inline)', async () => {
      // One row a page: an unsized page is the default 20 rows, past this test's cost limit of 100.
      expectServed(await serves(`{ jobs(first: 1) { edges { node { id } } } }`, job(`account { membership { plan } }`)));
      expectServed(
        await serves(
          `{ jobs(first: 1) { edges { ...E } } } fragment E on JobEdge { node { id } }`,
          `${job('...J')} fragment J on Job { account { credits { available } } }`,
        ),
      );
      expectRefused(await run(`{ jobs(first: 1) { edges { node { account { id } } } } }`), /depth limit of 4 exceeded, found 5/);
      expectRefused(
        await run(`{ jobs(first: 1) { edges { ...E } } } fragment E on JobEdge { node { account { id } } }`),
        /depth limit of 4 exceeded, found 5/,
      );
    });

    it('serves two aliases and refuses a third', async () => {
      expectServed(await serves(`{ a: me { id } b: me { id } }`, job(`a: id b: id`)));
      expectRefused(await run(`{ a: me { id } b: me { id } c: me { id } }`), /Aliases limit of 2 exceeded, found 3/);
    });

    it('serves two directives and refuses a third', async () => {
      expectServed(
        await serves(`{ me { id @include(if: true) name @skip(if: false) } }`, job(`id @include(if: true) status @skip(if: false)`)),
      );
      expectRefused(
        await run(`{ me { id @include(if: true) name @skip(if: false) email @include(if: true) } }`),
        /Directives limit of 2 exceeded, found 3/,
      );
    });

    it('weighs a page by its size: five jobs pass, ten do not', async () => {
      expectServed(await serves(`{ jobs(first: 5) { edges { node { id status } } } }`, job(`id status account { apiKeys { id name } }`)));
      expectRefused(await run(`{ jobs(first: 10) { edges { node { id status } } } }`), /Cost limit of 100 exceeded, found 162/);
    });

    it('weighs a page size given as a variable at its value, before the operation runs (the socket refuses the query after the cost)', async () => {
      const page = 'query($n: Int) { jobs(first: $n) { edges { node { id status } } } }';
      const cost = /Cost limit of 100 exceeded, found 162/;
      expectRefused(await withVariables(page, { n: 10 }), cost);
      if (door === 'HTTP') {
        expectServed(await withVariables(page, { n: 5 }));
        // Over GET too: the variables in the query string.
        expectRefused(await overGet(page, { n: 10 }), cost);
        expectServed(await overGet(page, { n: 5 }));
      } else {
        // Within the cost, the socket's own rule answers: queries go over HTTP.
        expect((await withVariables(page, { n: 5 })).errors?.[0].message).toMatch(/^Only subscriptions are served over WebSocket/);
      }
      // Not given at all, a page is the default 20 rows: weighed so.
      expectRefused(await withVariables(page, {}), /Cost limit of 100 exceeded, found 325/);
    });

    it('refuses an operation past the token limit before validating it', async () => {
      const fields = (n: number) => Array.from({ length: n }, () => 'id').join(' ');
      // `{ me { … } }`: five tokens besides the fields; the subscription, with its variable, nineteen.
      expectServed(await serves(`{ me { ${fields(35)} } }`, job(fields(21))));
      expectRefused(await serves(`{ me { ${fields(36)} } }`, job(fields(22))), /Document contains more th\w+ 40 tokens/);
    });

    it('suggests a field’s right name while introspection is on (the schema is public then)', async () => {
      const outcome = await run(`{ me { nam } }`);
      expectRefused(outcome, /Cannot query field "nam" on type "Account"/);
      expect(outcome.errors?.[0].message).toMatch(/Did you mean "name"\?$/);
    });
  });
});

/** The finding as it was made, with the limits as shipped (15 aliases, cost 30,000): a page size as a variable weighed at its value. */
describe('the cost limit with the default limits', () => {
  let h: Harness;
  let key: string;
  beforeAll(async () => {
    h = await createHarness();
    ({ key } = await h.account());
  });
  afterAll(() => h.close());

  const pages = (first: string) =>
    `query Pages${first === '$n' ? '($n: Int)' : ''} { ${Array.from({ length: 15 }, (_, i) => `p${i}: jobs(first: ${first}) { edges { node { id status operation createdAt } } }`).join(' ')} }`;
  const post = async (query: string, variables: Record<string, unknown>) => {
    const res = await h.request('POST', '/graphql', {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, variables }),
    });
    return { status: res.statusCode, body: res.json<GqlBody<Record<string, unknown>>>() };
  };
  const get = async (query: string, variables: Record<string, unknown>) => {
    const res = await h.request('GET', `/graphql?${new URLSearchParams({ query, variables: JSON.stringify(variables) })}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    return { status: res.statusCode, body: res.json<GqlBody<Record<string, unknown>>>() };
  };
  const refused = {
    status: 400,
    body: { errors: [{ message: 'Query Cost limit of 30000 exceeded, found 34500.', extensions: { code: 'INVALID_INPUT' } }] },
  };

  it('refuses 15 pages of jobs(first: $n) with n = 100 as it refuses the literal first: 100, over POST and GET, and serves n = 1', async () => {
    expect(await post(pages('100'), {})).toEqual(refused);
    for (const send of [post, get]) {
      expect(await send(pages('$n'), { n: 100 })).toEqual(refused);
      const served = await send(pages('$n'), { n: 1 });
      expect(served.status).toBe(200);
      expect(Object.keys(served.body.data)).toHaveLength(15);
    }
  });

  it('refuses it on the WebSocket too, by its cost, before the socket’s own rule (queries go over HTTP)', async () => {
    const ws = createClient({
      url: `${h.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${key}` },
      retryAttempts: 0,
    });
    const first = (variables: Record<string, unknown>) =>
      new Promise<Outcome['errors']>((resolve) =>
        ws.subscribe(
          { query: pages('$n'), variables },
          {
            next: (m) => resolve(m.errors as Outcome['errors']),
            error: (e) => resolve(e as Outcome['errors']),
            complete: () => resolve([]),
          },
        ),
      );
    try {
      expect(await first({ n: 100 })).toEqual(refused.body.errors);
      expect((await first({ n: 1 }))?.[0].message).toMatch(/^Only subscriptions are served over WebSocket/);
    } finally {
      await ws.dispose();
    }
  });
});
