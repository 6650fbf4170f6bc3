import { createClient, type Client } from 'graphql-ws';
import type { IncomingHttpHeaders } from 'node:http';
import WebSocket from 'ws';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { forgedKey, publicIdOf } from '../support/forged-key.js';
import { createHarness, type Harness } from '../support/harness.js';
import { waitFor } from '../support/wait-for.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { ErrorBody, GqlError, Connection } from '../support/bodies.js';

/** The limits the WebSocket door shares with HTTP, and its own, met by real clients (ws, graphql-ws). */

const UNKNOWN_JOB = '00000000-0000-4000-8000-000000000000';
const ONLY_SUBSCRIPTIONS = 'Only subscriptions are served over WebSocket; send queries and mutations over HTTP POST /graphql.';

const wsUrl = (h: Harness) => `${h.url.replace('http', 'ws')}/graphql`;

type Refused = { status: number; headers: IncomingHttpHeaders; body: ErrorBody };

/** Opens a socket as graphql-ws does (its subprotocol); the open socket, or the answer that refused the upgrade. */
function open(h: Harness, headers: Record<string, string> = {}): Promise<WebSocket | Refused> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl(h), 'graphql-transport-ws', { headers });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(body) }));
    });
    ws.once('error', reject);
  });
}

async function opened(h: Harness, headers?: Record<string, string>): Promise<WebSocket> {
  const ws = await open(h, headers);
  if (!(ws instanceof WebSocket)) throw new Error(`upgrade refused: ${ws.status} ${JSON.stringify(ws.body)}`);
  return ws;
}

/** The close code and reason the server sends. */
const closed = (ws: WebSocket) =>
  new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })));

/** Sends connection_init; `ack`, or how the server closed the socket. */
function init(ws: WebSocket, payload?: Record<string, unknown>): Promise<'ack' | { code: number; reason: string }> {
  return new Promise((resolve) => {
    const onMessage = (data: WebSocket.RawData) => {
      if (JSON.parse(String(data)).type === 'connection_ack') resolve('ack');
    };
    ws.on('message', onMessage);
    void closed(ws).then(resolve);
    ws.send(JSON.stringify({ type: 'connection_init', ...(payload ? { payload } : {}) }));
  });
}

/** The next message about operation `id`. */
/** A graphql-transport-ws message about one operation. */
type OperationMessage = { id: string; type: string; payload: { data?: unknown; errors: GqlError[] } };

const answerTo = (ws: WebSocket, id: string) =>
  new Promise<OperationMessage>((resolve) => {
    const onMessage = (data: WebSocket.RawData) => {
      const message = JSON.parse(String(data)) as OperationMessage;
      if (message.id !== id) return;
      ws.off('message', onMessage);
      resolve(message);
    };
    ws.on('message', onMessage);
  });

/** A graphql-ws client's subscribe: the error codes it ends with, the first data it got, or the close event. */
function subscribe(client: Client, query: string, variables: Record<string, unknown> = {}) {
  return new Promise<{ codes?: (string | undefined)[]; errors?: readonly unknown[]; data?: unknown; closed?: number }>((resolve) => {
    client.subscribe(
      { query, variables },
      {
        next: (msg) =>
          resolve(
            msg.errors ? { codes: msg.errors.map((e) => e.extensions?.code as string), errors: [...msg.errors] } : { data: msg.data },
          ),
        error: (e) =>
          resolve(Array.isArray(e) ? { codes: e.map((x) => x.extensions?.code), errors: e } : { closed: (e as CloseEvent).code }),
        complete: () => resolve({}),
      },
    );
  });
}

const client = (h: Harness, key: string) =>
  createClient({
    url: wsUrl(h),
    webSocketImpl: WebSocket,
    connectionParams: { Authorization: `Bearer ${key}` },
    retryAttempts: 0,
    lazy: true,
  });

const until = <T>(what: string, value: () => Promise<T | undefined | null | false>, ms = 10_000) =>
  waitFor(value, { describe: what, timeout: ms, interval: 10 }) as Promise<T>;

describe('the WebSocket door', () => {
  let h: Harness;
  let site: FakeSite;
  beforeAll(async () => {
    site = await startFakeSite();
    // Proxies on loopback are trusted, so a test can be a client address of its own (X-Forwarded-For).
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort, RATE_LIMIT_IP_PER_MINUTE: '10000', TRUST_PROXY: 'loopback' });
  });
  afterAll(async () => {
    await h.close();
    await site.close();
  });

  it('refuses connection_init without valid credentials with 4401, before any operation', async () => {
    const { key, keyId } = await h.account();
    const victimPublicId = publicIdOf(key);
    const cases: [string, Record<string, unknown> | undefined][] = [
      ['no parameters', undefined],
      ['no key', {}],
      ['not a key', { Authorization: 'Bearer nonsense' }],
      ['a key nobody has', { Authorization: `Bearer ${forgedKey('AAAAAAAAAAAA')}` }],
      ['a real public id with a wrong secret', { Authorization: `Bearer ${forgedKey(victimPublicId)}` }],
    ];
    for (const [, payload] of cases) {
      const ws = await opened(h);
      expect(await init(ws, payload)).toEqual({
        code: 4401,
        reason: 'Unauthorized: A valid API key is required (Authorization: Bearer <key>).',
      });
    }
    // A revoked key too; the same key still connects until then.
    expect(await init(await opened(h), { Authorization: `Bearer ${key}` })).toBe('ack');
    await h.services.apiKeys.revoke(OPERATOR, keyId);
    expect(await init(await opened(h), { Authorization: `Bearer ${key}` })).toMatchObject({ code: 4401 });
    // graphql-ws's own client sees the same close.
    const c = createClient({ url: wsUrl(h), webSocketImpl: WebSocket, retryAttempts: 0 });
    expect(await subscribe(c, `subscription { jobUpdated(id: "${UNKNOWN_JOB}") { id } }`)).toEqual({ closed: 4401 });
    await c.dispose();
    // A subscribe before connection_init is graphql-ws's own 4401.
    const early = await opened(h);
    early.send(
      JSON.stringify({ id: '1', type: 'subscribe', payload: { query: `subscription { jobUpdated(id: "${UNKNOWN_JOB}") { id } }` } }),
    );
    expect((await closed(early)).code).toBe(4401);
  });

  it('takes the key from the upgrade request’s Authorization header too', async () => {
    const { key } = await h.account();
    const ws = await opened(h, { authorization: `Bearer ${key}` });
    expect(await init(ws)).toBe('ack');
    ws.terminate();
  });

  it('closes a socket that sends a message over 64 KiB with 1009, and answers one of exactly 64 KiB', async () => {
    const { key } = await h.account();
    const ws = await opened(h);
    expect(await init(ws, { Authorization: `Bearer ${key}` })).toBe('ack');
    const message = (bytes: number, id: string) => {
      const bare = JSON.stringify({
        id,
        type: 'subscribe',
        payload: { query: `subscription { jobUpdated(id: "${UNKNOWN_JOB}") { id } }` },
      });
      // Blanks inside the document: valid GraphQL, and well under the token limit.
      return bare.replace('{ id } }', `{ id }${' '.repeat(bytes - Buffer.byteLength(bare))} }`);
    };
    const fits = message(64 * 1024, 'fits');
    expect(Buffer.byteLength(fits)).toBe(65_536);
    const answer = answerTo(ws, 'fits');
    ws.send(fits);
    expect(await answer).toMatchObject({ type: 'next', payload: { errors: [{ extensions: { code: 'NOT_FOUND' } }] } });
    const close = closed(ws);
    ws.send(message(64 * 1024 + 1, 'over'));
    expect((await close).code).toBe(1009);
  });

  it('serves subscriptions only: a query or a mutation is refused INVALID_INPUT and runs nothing', async () => {
    const { key } = await h.account();
    const c = client(h, key);
    try {
      for (const query of ['{ me { id } }', 'mutation { createApiKey(name: "over the socket") { key } }']) {
        expect((await subscribe(c, query)).errors).toEqual([{ message: ONLY_SUBSCRIPTIONS, extensions: { code: 'INVALID_INPUT' } }]);
      }
      // With an operation name picking the query out of a document that has both.
      const named = await new Promise<unknown>((resolve) =>
        c.subscribe(
          { query: `query Me { me { id } } subscription S { jobUpdated(id: "${UNKNOWN_JOB}") { id } }`, operationName: 'Me' },
          { next: resolve, error: resolve, complete: () => resolve('complete') },
        ),
      );
      expect(named).toEqual([{ message: ONLY_SUBSCRIPTIONS, extensions: { code: 'INVALID_INPUT' } }]);
    } finally {
      await c.dispose();
    }
    expect((await h.gql<{ me: { apiKeys: { id: string }[] } }>('{ me { apiKeys { id } } }', {}, key)).data.me.apiKeys).toHaveLength(1);
  });

  it('runs at most 20 subscriptions at once on one connection; the 21st is refused RATE_LIMITED until one ends', async () => {
    const { key } = await h.account();
    // A parse whose page does not answer yet: its job stays RUNNING, and each subscription to it stays open.
    let answerPage!: () => void;
    const pageMayAnswer = new Promise<void>((resolve) => (answerPage = resolve));
    site.route('/slow', (_req, res) => void pageMayAnswer.then(() => res.writeHead(404).end()));
    const parse = h.rest('/api/parse', { url: `${site.origin}/slow` }, key);
    const jobId = await until(
      'the running parse',
      async () =>
        (await h.gql<{ jobs: Connection<{ id: string; status: string }> }>('{ jobs(first: 1) { edges { node { id status } } } }', {}, key))
          .data.jobs.edges[0]?.node.id as string,
    );
    const c = client(h, key);
    const pushes: string[] = [];
    const refusals: unknown[] = [];
    const follow = () =>
      c.subscribe(
        { query: `subscription($id: ID!) { jobUpdated(id: $id) { status } }`, variables: { id: jobId } },
        {
          next: (m) => void pushes.push((m.data as { jobUpdated: { status: string } } | null)?.jobUpdated.status ?? ''),
          error: (e) => void refusals.push(e),
          complete: () => undefined,
        },
      );
    try {
      // 21 at once: the 21st is refused, whatever else is under way meanwhile.
      const stops = Array.from({ length: 21 }, follow);
      await until('20 subscriptions running and one refused', async () => pushes.length === 20 && refusals.length === 1);
      expect(new Set(pushes)).toEqual(new Set(['RUNNING']));
      expect(refusals).toEqual([
        [
          {
            message: 'At most 20 subscriptions run at once on one connection; complete one first.',
            extensions: { code: 'RATE_LIMITED', details: { limit: 20 } },
          },
        ],
      ]);
      // One ends: another may start.
      stops[0]();
      expect(await subscribe(c, `subscription($id: ID!) { jobUpdated(id: $id) { status } }`, { id: jobId })).toEqual({
        data: { jobUpdated: { status: 'RUNNING' } },
      });
    } finally {
      await c.dispose();
      answerPage();
      await parse;
    }
  });

  it('authenticates once per socket, and again after the key changed: a revoked key’s socket is closed 4401 as soon as this instance hears of it', async () => {
    const { key, keyId } = await h.account();
    const ws = await opened(h);
    expect(await init(ws, { Authorization: `Bearer ${key}` })).toBe('ack');
    const query = `subscription { jobUpdated(id: "${UNKNOWN_JOB}") { id } }`;
    const first = answerTo(ws, 'a');
    ws.send(JSON.stringify({ id: 'a', type: 'subscribe', payload: { query } }));
    expect((await first).payload.errors[0].extensions.code).toBe('NOT_FOUND');
    const heard = new Promise<void>((resolve) => {
      const stop = h.notifications.on('mediagate_auth', (change) => change.apiKeyId === keyId && (stop(), resolve()));
    });
    const close = closed(ws);
    await h.services.apiKeys.revoke(OPERATOR, keyId);
    await heard;
    // Without any further message from the client.
    expect(await close).toMatchObject({ code: 4401 });
  });

  it('holds at most 100 sockets open per client address; the 101st upgrade is refused 429 until one closes', async () => {
    const address = { 'x-forwarded-for': '198.51.100.100' };
    const sockets = await Promise.all(Array.from({ length: 100 }, () => opened(h, address)));
    try {
      const refused = (await open(h, address)) as Refused;
      expect(refused.status).toBe(429);
      expect(refused.body.error).toMatchObject({
        code: 'RATE_LIMITED',
        message: 'At most 100 WebSockets may be open from one address; close one first.',
        details: { limit: 100 },
      });
      const gone = closed(sockets[0]);
      sockets[0].close();
      await gone;
      // The server counts it out when its side of the connection closes.
      const again = await until('a free place', async () => {
        const ws = await open(h, address);
        return ws instanceof WebSocket ? ws : null;
      });
      sockets.push(again);
      // Another address meanwhile has its own count.
      (await opened(h, { 'x-forwarded-for': '198.51.100.101' })).terminate();
    } finally {
      sockets.forEach((ws) => ws.terminate());
    }
  });
});

describe('the WebSocket door’s rate limits, shared with HTTP', () => {
  it('refuses an upgrade past the per-address limit with 429, Retry-After and RateLimit headers, before any handshake, counting HTTP requests too', async () => {
    const h = await createHarness({ RATE_LIMIT_IP_PER_MINUTE: '3' });
    try {
      expect((await h.request('GET', '/api/jobs/x')).statusCode).toBe(401);
      const first = await opened(h);
      const second = await opened(h);
      const refused = (await open(h)) as Refused;
      expect(refused.status).toBe(429);
      expect(refused.body.error).toMatchObject({ code: 'RATE_LIMITED', details: { limit: 3, windowSeconds: 60 } });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
      expect(refused.headers.ratelimit).toMatch(/^limit=3, remaining=0, reset=\d+$/);
      expect(refused.headers['ratelimit-policy']).toBe('3;w=60');
      expect(refused.headers['sec-websocket-accept']).toBeUndefined();
      // And HTTP after it: the same bucket.
      expect((await h.request('GET', '/api/jobs/x')).statusCode).toBe(429);
      first.terminate();
      second.terminate();
    } finally {
      await h.close();
    }
  });

  it('counts each subscribe against the key, in the same bucket as its HTTP requests, both ways', async () => {
    const h = await createHarness({ RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_IP_PER_MINUTE: '10000' });
    const query = `subscription { jobUpdated(id: "${UNKNOWN_JOB}") { id } }`;
    try {
      // HTTP first, then the socket.
      const a = await h.account();
      for (let i = 0; i < 3; i++) expect((await h.gql('{ me { id } }', {}, a.key)).status).toBe(200);
      const ca = client(h, a.key);
      const limited = await subscribe(ca, query);
      expect(limited.errors).toEqual([
        {
          message: expect.stringMatching(/^Too many requests; retry in \d+ s\.$/),
          extensions: { code: 'RATE_LIMITED', details: { retryAfterSeconds: expect.any(Number), limit: 3, windowSeconds: 60 } },
        },
      ]);
      await ca.dispose();

      // The socket first (connecting takes nothing; each subscribe one point), then HTTP.
      const b = await h.account();
      const cb = client(h, b.key);
      for (let i = 0; i < 3; i++) expect((await subscribe(cb, query)).codes).toEqual(['NOT_FOUND']);
      expect((await subscribe(cb, query)).codes).toEqual(['RATE_LIMITED']);
      await cb.dispose();
      const http = await h.rest('/api/parse', { url: 'https://video.example/x' }, b.key);
      expect(http.statusCode).toBe(429);
      expect(http.json<ErrorBody>().error).toMatchObject({ code: 'RATE_LIMITED', details: { limit: 3, windowSeconds: 60 } });
    } finally {
      await h.close();
    }
  });

  it('finds the client’s address at the upgrade by the same TRUST_PROXY rule as HTTP', async () => {
    const h = await createHarness({ RATE_LIMIT_IP_PER_MINUTE: '2', TRUST_PROXY: '1' });
    try {
      const from = (address: string) => ({ 'x-forwarded-for': address });
      expect((await h.request('GET', '/api/jobs/x', { headers: from('203.0.113.1') })).statusCode).toBe(401);
      (await opened(h, from('203.0.113.1'))).terminate();
      expect(((await open(h, from('203.0.113.1'))) as Refused).status).toBe(429);
      // Another client behind the same proxy has its own bucket.
      (await opened(h, from('203.0.113.2'))).terminate();
      (await opened(h, from('203.0.113.2'))).terminate();
      expect(((await open(h, from('203.0.113.2'))) as Refused).status).toBe(429);
    } finally {
      await h.close();
    }
  });
});
