import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { misbehave, startFaultyUpstream, INVALID_JSON_BODY, type Fault } from '../fakes/faulty-upstream.fake.js';
import { checkGraphqlAnswer, checkLedger, checkRestError, snapshot } from '../support/contract-checks.js';
import { createHarness, type Harness, type TestResponse } from '../support/harness.js';
import { makeMedia } from '../support/media.js';
import { TEST_DATABASES } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';
import type { ErrorCode } from '../../src/errors.js';
import { parseBody, type GqlBody, type ParseBody } from '../support/bodies.js';

/** A successful parse as the ledger check counts it: its job, and what it charged. */
const charge = (p: ParseBody): [string, number] => [p.id, p.credits.charged];

const PARSE = 'mutation($i: ParseInput!) { parse(input: $i) { id credits { charged balance } } }';
const TRANSCRIBE = 'mutation($i: TranscribeInput!) { transcribe(input: $i) { id credits { charged balance } } }';

/** A page that declares all a parse needs (no probe), answering after `delayMs`; tells how many it has answered. */
const pageAfter = (site: FakeSite, path: string, delayMs: (n: number) => number) => {
  let n = 0;
  let answered = 0;
  const html =
    `<html><head><meta property="og:video" content="${site.origin}/clip.mp4"><meta property="og:video:type" content="video/mp4">` +
    `<meta property="og:video:width" content="160"><meta property="og:video:height" content="120"><meta property="video:duration" content="2"></head></html>`;
  site.route(path, (_req, res) => {
    // Not synchronisation: the upstream's own pace, which spreads the answers the test cuts through.
    setTimeout(() => (answered++, res.writeHead(200, { 'content-type': 'text/html' }).end(html)), delayMs(n++));
  });
  return { answered: () => answered };
};

/**
 * a. The database's connections die while ~50 parses are in flight (pg_terminate_backend on this
 * test's own database, never a restart of the shared server; on the embedded database, every client
 * connection is cut at its relay). Each request succeeds and is charged once, or fails with a
 * contract error and is charged nothing; the ledger still sums; and the same process serves again.
 */
const kinds = TEST_DATABASES;
describe.each(kinds)('database connections killed under load (%s database)', (kind) => {
  let h: Harness;
  const unexpected: string[] = [];
  /** A contract check whose failure also shows what the gateway logged as unexpected. */
  const explained = <T>(check: () => T): T => {
    try {
      return check();
    } catch (err) {
      throw new Error(`${(err as Error).message}\nlogged: ${unexpected.join('') || 'nothing'}`);
    }
  };
  let site: FakeSite;
  let slow: ReturnType<typeof pageAfter>;
  beforeAll(async () => {
    site = await startFakeSite();
    // Answers spread over 150-500 ms, so the kills find requests before, during and after their work.
    slow = pageAfter(site, '/slow', (n) => 150 + (n % 8) * 50);
    pageAfter(site, '/quick', () => 0);
    h = await createHarness(
      { FETCH_ALLOW_HOSTS: site.hostPort, PARSE_TIMEOUT_SECONDS: '3', RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_IP_PER_MINUTE: '100000' },
      // What the doors log when they mask an error as INTERNAL_ERROR: a failure below then says what it was.
      pino({ level: 'error' }, { write: (line: string) => void unexpected.push(line) }),
      { database: kind, severable: true },
    );
  });
  afterAll(async () => {
    await h?.close();
    await site?.close();
  });

  it('answers each request with a result charged once or a contract error charged nothing, and serves again without a restart', async () => {
    const { key, accountId } = await h.account({ credits: 200 });
    const warm = await h.rest('/api/parse', { url: `${site.origin}/quick` }, key);
    expect(warm.statusCode).toBe(200);

    const url = `${site.origin}/slow`;
    const inFlight: Promise<{ door: 'rest' | 'graphql'; res: TestResponse }>[] = Array.from({ length: 50 }, (_, i) =>
      i % 2 === 0
        ? h.rest('/api/parse', { url }, key).then((res) => ({ door: 'rest' as const, res }))
        : h.graphqlRequest(PARSE, { i: { url } }, key).then((res) => ({ door: 'graphql' as const, res })),
    );
    // Kill when the first pages are being fetched (holds placed), and twice more as answers come back (captures).
    await waitFor(() => site.hits.filter((hit) => hit === 'GET /slow').length >= 10, {
      describe: '10 pages asked for',
      timeout: 10_000,
      interval: 5,
    });
    const killed: number[] = [];
    // The 10 pages asked for are all answered, whatever the kills do: after 4 of them, and after 8.
    const answeredBefore = slow.answered();
    for (const answers of [0, 4, 8]) {
      await waitFor(() => slow.answered() - answeredBefore >= answers, {
        describe: `${answers} pages answered`,
        timeout: 10_000,
        interval: 5,
      });
      killed.push(await h.severDatabaseConnections());
    }
    expect(killed.reduce((a, b) => a + b)).toBeGreaterThan(0);
    const answers = await Promise.all(inFlight);

    // Every answer is a result or one of the contract's errors: a 503 for the outage, never a 500.
    const succeeded = new Map<string, number>();
    const failures: ErrorCode[] = [];
    for (const { door, res } of answers) {
      if (door === 'rest') {
        if (res.statusCode === 200) succeeded.set(...charge(parseBody(res)));
        else failures.push(explained(() => checkRestError(res)));
      } else {
        const codes = explained(() => checkGraphqlAnswer(res));
        if (codes.length) failures.push(...codes);
        else succeeded.set(...charge(res.json<GqlBody<{ parse: ParseBody }>>().data.parse));
      }
    }
    expect(succeeded.size + failures.length).toBe(50);
    // 503 for a request that met the outage; 504 for one that its deadline overtook while it waited.
    expect(failures.filter((c) => c !== 'PROVIDER_UNAVAILABLE' && c !== 'PROVIDER_TIMEOUT')).toEqual([]);
    expect([...succeeded.values()].every((c) => c === 1)).toBe(true);

    // Serving again, in this same process, within seconds: ready, then a parse that succeeds.
    const outageOver = Date.now();
    await waitFor(async () => (await h.request('GET', '/readyz')).statusCode === 200, {
      describe: '/readyz to answer 200',
      timeout: 5_000,
      interval: 50,
    });
    const recovered = Date.now() - outageOver;
    const again = await h.rest('/api/parse', { url: `${site.origin}/quick` }, key);
    expect(again.statusCode).toBe(200);
    expect(recovered).toBeLessThan(5_000);

    // A task the outage cut off between its hold and its settlement keeps the hold until its deadline;
    // the sweeper then releases it. After that: charged exactly the answered successes, nothing held,
    // and the ledger sums.
    await waitFor(async () => (await h.services.jobs.sweep(), (await snapshot(h, [accountId])).get(accountId)!.openJobs === 0), {
      describe: 'the sweeper to close every job',
      timeout: 10_000,
      interval: 250,
    });
    const jobs = await h.sql<{ id: string; status: string; credits_charged: string }>(
      `select id, status, credits_charged from job where account_id = ?`,
      [accountId],
    );
    const charged = jobs.filter((j) => j.status === 'SUCCEEDED').map((j) => j.id);
    expect(new Set(charged)).toEqual(new Set([warm.json<{ id: string }>().id, again.json<{ id: string }>().id, ...succeeded.keys()]));
    expect(jobs.filter((j) => j.status !== 'SUCCEEDED').every((j) => Number(j.credits_charged) === 0)).toBe(true);
    const snap = (await snapshot(h, [accountId])).get(accountId)!;
    checkLedger(accountId, snap);
    expect(snap).toMatchObject({ available: 200 - charged.length, held: 0, captured: charged.length });
    process.stdout.write(
      `faults/${kind}: killed ${killed.join('+')} connections; ${succeeded.size} succeeded, ${failures.length} failed (${[...new Set(failures)].join(', ') || 'none'}); ready again after ${recovered} ms\n`,
    );
  }, 60_000);
});

/**
 * b. Redis stops while REDIS_URL is set (a redis-server of this test's own, on a free port): rate
 * limits fall back to counting in this process, with one warning, never a 500, still refusing past
 * the limit; and once Redis is back, it is used again.
 */
describe('Redis stopped and started again', () => {
  let redis: ChildProcess | null = null;
  let port: number;
  let h: Harness;
  const lines: { level: number; msg: string }[] = [];
  let probe: Redis;

  const startRedis = async () => {
    redis = spawn('/usr/bin/redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    await waitFor(async () => (await probe.ping().catch(() => null)) === 'PONG', {
      describe: 'redis-server to answer PONG',
      timeout: 5_000,
      interval: 50,
    });
  };
  /** The test's own client, which keeps trying to connect every 50 ms. */
  const connectProbe = async () => {
    probe = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 50,
    });
    probe.on('error', () => undefined);
    await probe.connect().catch(() => undefined);
  };
  const stopRedis = async () => {
    const child = redis!;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    redis = null;
  };

  beforeAll(async () => {
    port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    await connectProbe();
    await startRedis();
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    h = await createHarness(
      { REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_PER_MINUTE: '4', RATE_LIMIT_IP_PER_MINUTE: '1000' },
      logger,
    );
  });
  afterAll(async () => {
    await h?.close();
    probe?.disconnect();
    if (redis) await stopRedis();
  });

  const redisWarnings = () => lines.filter((l) => l.level === 40 && /redis/i.test(l.msg));
  const me = (key: string) => h.graphqlRequest('{ me { id } }', {}, key);

  it('counts in this process with one warning while Redis is down, and in Redis again once it is back', async () => {
    const { key, keyId } = await h.account();
    // Named by the key's id: a key is counted once it is proven.
    const counter = `mediagate:rl:key:${keyId}`;
    expect((await me(key)).statusCode).toBe(200);
    expect((await me(key)).statusCode).toBe(200);
    expect(await probe.get(counter)).toBe('2');

    await stopRedis();
    // Each refusal is the contract's, from the in-process counters, which start afresh: four more, then 429.
    const down: TestResponse[] = [];
    for (let i = 0; i < 6; i++) down.push(i % 2 ? await me(key) : await h.rest('/api/parse', { url: 'not a url' }, key));
    expect(down.map((r) => r.statusCode)).toEqual([400, 200, 400, 200, 429, 429]);
    expect(checkRestError(down[4])).toBe('RATE_LIMITED');
    expect(checkGraphqlAnswer(down[5])).toEqual(['RATE_LIMITED']);
    // Reconnection attempts go on meanwhile: still one warning. Seen on the port, where a listener
    // counts two of the gateway's (the probe is off meanwhile) and hangs up at once, as a dead Redis would.
    probe.disconnect();
    let attempts = 0;
    const deadRedis = createServer((socket) => (attempts++, socket.destroy()));
    await new Promise<void>((resolve) => deadRedis.listen(port, '127.0.0.1', resolve));
    try {
      await waitFor(() => attempts >= 2, { describe: "two of the gateway's reconnection attempts", timeout: 10_000 });
    } finally {
      await new Promise((resolve) => deadRedis.close(resolve));
      await connectProbe();
    }
    expect((await me(key)).statusCode).toBe(429);
    expect(redisWarnings()).toHaveLength(1);
    expect(redisWarnings()[0].msg).toMatch(/counted per process/);

    // Back (an empty Redis: it kept nothing): ioredis reconnects on its own and the limiters use it again.
    await startRedis();
    await waitFor(() => lines.some((l) => l.level === 30 && /Redis is reachable again/.test(l.msg)), {
      describe: "the 'Redis is reachable again' line",
      timeout: 10_000,
      interval: 50,
    });
    expect((await me(key)).statusCode).toBe(200);
    expect(await probe.get(counter)).toBe('1');
    for (let i = 0; i < 3; i++) expect((await me(key)).statusCode).toBe(200);
    expect((await me(key)).statusCode).toBe(429);
    expect(await probe.get(counter)).toBe('5');
    expect(redisWarnings()).toHaveLength(1);
  }, 30_000);
});

/**
 * c. Upstreams that break the way real ones do, for each kind of provider and through both doors:
 * the connection reset, JSON that is not JSON, and bytes that trickle past the deadline. The caller
 * gets the contract's code and none of the upstream's words or our secrets, and the hold is released:
 * the job FAILED, charged nothing, the balance and the ledger as before.
 * Not repeated here: a page that never answers (timeout.test.ts), an upstream refusing the key
 * (transcribe/deepgram tests), cobalt's own error codes (cobalt.test.ts).
 */
describe('bad upstreams', () => {
  const EXPECTED: Record<Fault, { status: number; code: ErrorCode }> = {
    reset: { status: 502, code: 'PROVIDER_ERROR' },
    'invalid-json': { status: 502, code: 'PROVIDER_ERROR' },
    trickle: { status: 504, code: 'PROVIDER_TIMEOUT' },
  };
  const SECRETS = ['cobalt-fault-secret', 'sk-fault-secret', 'dg-fault-secret', 'aai-fault-secret'];
  /** The kinds of provider, each alone in its harness, and the faults that apply to it (a page is not JSON). */
  const MATRIX: {
    provider: string;
    operation: 'parse' | 'transcribe';
    faults: Fault[];
    env: (upstream: string) => Record<string, string>;
  }[] = [
    { provider: 'builtin', operation: 'parse', faults: ['reset', 'trickle'], env: () => ({ PARSE_PROVIDERS: 'builtin' }) },
    {
      provider: 'cobalt',
      operation: 'parse',
      faults: ['reset', 'invalid-json', 'trickle'],
      env: (u) => ({ PARSE_PROVIDERS: 'cobalt', COBALT_API_URL: u, COBALT_API_KEY: SECRETS[0] }),
    },
    {
      provider: 'openai',
      operation: 'transcribe',
      faults: ['reset', 'invalid-json', 'trickle'],
      env: (u) => ({ TRANSCRIBE_PROVIDERS: 'openai', OPENAI_BASE_URL: `${u}/v1`, OPENAI_API_KEY: SECRETS[1] }),
    },
    {
      provider: 'deepgram',
      operation: 'transcribe',
      faults: ['reset', 'invalid-json', 'trickle'],
      env: (u) => ({ TRANSCRIBE_PROVIDERS: 'deepgram', DEEPGRAM_BASE_URL: u, DEEPGRAM_API_KEY: SECRETS[2] }),
    },
    {
      provider: 'assemblyai',
      operation: 'transcribe',
      faults: ['reset', 'invalid-json', 'trickle'],
      env: (u) => ({ TRANSCRIBE_PROVIDERS: 'assemblyai', ASSEMBLYAI_BASE_URL: u, ASSEMBLYAI_API_KEY: SECRETS[3] }),
    },
  ];

  let site: FakeSite;
  let upstream: Awaited<ReturnType<typeof startFaultyUpstream>>;
  const stops: (() => void)[] = [];
  beforeAll(async () => {
    site = await startFakeSite();
    site.file('/talk.mp3', makeMedia({ seconds: 2 }), 'audio/mpeg');
    for (const fault of ['reset', 'trickle'] as Fault[]) {
      site.route(`/fault/${fault}`, (req, res) => stops.push(misbehave(fault, req, res, { contentType: 'text/html; charset=utf-8' })));
    }
    upstream = await startFaultyUpstream();
  });
  afterAll(async () => {
    stops.forEach((stop) => stop());
    await site?.close();
    await upstream?.close();
  });

  describe.each(MATRIX)('$provider', ({ provider, operation, faults, env }) => {
    // Two processes per provider: deadlines short enough for the trickle to pass them, and long
    // enough that a busy machine never turns a reset or bad JSON into a timeout. Two failures per
    // fault: never the five that open a provider's circuit, so no answer here is the breaker's.
    const harnesses = new Map<string, Harness>();
    const harnessFor = async (fault: Fault) => {
      const deadlines =
        fault === 'trickle'
          ? { PARSE_TIMEOUT_SECONDS: '1', TRANSCRIBE_TIMEOUT_SECONDS: '2' }
          : { PARSE_TIMEOUT_SECONDS: '30', TRANSCRIBE_TIMEOUT_SECONDS: '30' };
      const which = fault === 'trickle' ? 'short' : 'long';
      if (!harnesses.has(which))
        harnesses.set(which, await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort, ...deadlines, ...env(upstream.origin) }));
      return harnesses.get(which)!;
    };
    afterAll(async () => {
      for (const h of harnesses.values()) await h.close();
    });

    it.each(faults)(
      '%s: the contract error through both doors, the hold released',
      async (fault) => {
        const h = await harnessFor(fault);
        upstream.state.fault = fault;
        // The fault must really have been met: the page, or the provider's API.
        const reached = () =>
          provider === 'builtin' ? site.hits.filter((hit) => hit.includes('/fault/')).length : upstream.state.requests;
        const reachedBefore = reached();
        const input =
          operation === 'parse'
            ? { url: provider === 'builtin' ? `${site.origin}/fault/${fault}` : `${site.origin}/watch/fault` }
            : { mediaUrl: `${site.origin}/talk.mp3` };
        const viaRest = await h.account({ credits: 5 });
        const viaGraphql = await h.account({ credits: 5 });
        const [rest, graphql] = await Promise.all([
          h.rest(`/api/${operation}`, input, viaRest.key),
          h.graphqlRequest(operation === 'parse' ? PARSE : TRANSCRIBE, { i: input }, viaGraphql.key),
        ]);
        const { status, code } = EXPECTED[fault];
        expect(rest.statusCode).toBe(status);
        expect(checkRestError(rest)).toBe(code);
        expect(checkGraphqlAnswer(graphql)).toEqual([code]);
        expect(reached()).toBeGreaterThanOrEqual(reachedBefore + 2);
        for (const res of [rest, graphql]) {
          for (const secret of [...SECRETS, upstream.hostPort, INVALID_JSON_BODY.slice(20), 'ECONNRESET', 'socket', 'Unexpected'])
            expect(res.body).not.toContain(secret);
        }
        for (const { accountId } of [viaRest, viaGraphql]) {
          expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
          expect(await h.ledgerSums(accountId)).toEqual({ available: 5, held: 0 });
          const jobs = await h.sql<{ status: string; error_code: string; credits_charged: string }>(
            `select status, error_code, credits_charged from job where account_id = ?`,
            [accountId],
          );
          expect(jobs.map((j) => [j.status, j.error_code, Number(j.credits_charged)])).toEqual([['FAILED', code, 0]]);
        }
      },
      20_000,
    );
  });
});
