import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { createHarness, type Harness } from '../support/harness.js';

/** What a client learns from one operation, whichever door it came through. */
interface Outcome {
  /** The HTTP status; null over the WebSocket. */
  status: number | null;
  data?: any;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/**
 * The operation limits (graphql-armor for depth, aliases, directives and cost; graphql-js for tokens),
 * set low here so that valid operations reach them, through both doors: POST /graphql and graphql-ws.
 */
describe('GraphQL operation limits', () => {
  let h: Harness;
  let key: string;
  let ws: Client;
  beforeAll(async () => {
    h = await createHarness({ GRAPHQL_MAX_DEPTH: '4', GRAPHQL_MAX_ALIASES: '2', GRAPHQL_MAX_DIRECTIVES: '2', GRAPHQL_MAX_COST: '100', GRAPHQL_MAX_TOKENS: '40' });
    ({ key } = await h.account());
    ws = createClient({ url: h.url.replace('http', 'ws') + '/graphql', webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${key}` }, retryAttempts: 0 });
  });
  afterAll(async () => {
    await ws.dispose();
    await h.close();
  });

  const doors: Record<'HTTP' | 'WebSocket', (query: string) => Promise<Outcome>> = {
    HTTP: async (query) => {
      const res = await h.request('POST', '/graphql', { headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ query }) });
      return { status: res.statusCode, ...res.json() };
    },
    // graphql-ws runs queries too: one result, then complete; a refused operation ends in `error`.
    WebSocket: (query) =>
      new Promise((resolve) => {
        let outcome: Outcome = { status: null };
        ws.subscribe(
          { query },
          {
            next: (msg) => void (outcome = { status: null, data: msg.data, errors: msg.errors as Outcome['errors'] }),
            error: (errors) => resolve({ status: null, errors: errors as Outcome['errors'] }),
            complete: () => resolve(outcome),
          },
        );
      }),
  };

  describe.each(Object.keys(doors) as (keyof typeof doors)[])('over %s', (door) => {
    const run = (query: string) => doors[door](query);
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
      expectServed(await run(`{ jobs { edges { node { id } } } }`));
      expectServed(await run(`{ jobs { edges { ...E } } } fragment E on JobEdge { node { id } }`));
      expectRefused(await run(`{ jobs { edges { node { account { id } } } } }`), /depth limit of 4 exceeded, found 5/);
      expectRefused(await run(`{ jobs { edges { ...E } } } fragment E on JobEdge { node { account { id } } }`), /depth limit of 4 exceeded, found 5/);
    });

    it('serves two aliases and refuses a third', async () => {
      expectServed(await run(`{ a: me { id } b: me { id } }`));
      expectRefused(await run(`{ a: me { id } b: me { id } c: me { id } }`), /Aliases limit of 2 exceeded, found 3/);
    });

    it('serves two directives and refuses a third', async () => {
      expectServed(await run(`{ me { id @include(if: true) name @skip(if: false) } }`));
      expectRefused(await run(`{ me { id @include(if: true) name @skip(if: false) email @include(if: true) } }`), /Directives limit of 2 exceeded, found 3/);
    });

    it('weighs a page by its size: five jobs pass, ten do not', async () => {
      expectServed(await run(`{ jobs(first: 5) { edges { node { id status } } } }`));
      expectRefused(await run(`{ jobs(first: 10) { edges { node { id status } } } }`), /Cost limit of 100 exceeded, found 162/);
    });

    it('refuses an operation past the token limit before validating it', async () => {
      const fields = (n: number) => Array.from({ length: n }, () => 'id').join(' ');
      // `{ me { … } }`: five tokens besides the fields.
      expectServed(await run(`{ me { ${fields(35)} } }`));
      expectRefused(await run(`{ me { ${fields(36)} } }`), /Document contains more th\w+ 40 tokens/);
    });

    it('suggests a field’s right name while introspection is on (the schema is public then)', async () => {
      const outcome = await run(`{ me { nam } }`);
      expectRefused(outcome, /Cannot query field "nam" on type "Account"/);
      expect(outcome.errors?.[0].message).toMatch(/Did you mean "name"\?$/);
    });
  });
});
