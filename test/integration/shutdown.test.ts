import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import WebSocket from 'ws';
import { loadConfig } from '../../src/config.js';
import { prepareConfig } from '../../src/local-config.js';
import { createServices } from '../../src/root.js';
import { startFakeOpenAi, verboseJsonFixture } from '../fakes/openai.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { makeMedia } from '../support/media.js';
import { createTestDatabase } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';
import { readyEntry } from '../support/cli-process.js';
import { OPERATOR } from '../../src/modules/principal.js';

const run = promisify(execFile);
const NODE = join(process.cwd(), 'node_modules/.bin/node');
const CLI = join(process.cwd(), 'dist/cli/main.js');
const PEPPER = 'shutdown-test-pepper-0123456789abcdef';

const PAGE = `<!doctype html><html><head><title>Slow page</title></head><body>
  <video controls><source src="/m.mp4" type="video/mp4"></video></body></html>`;

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** performance.now() when the process ended. */
  at: number;
}

/** A running `mediagate serve` or `mediagate worker`, as an orchestrator sees it. */
interface Started {
  child: ChildProcess;
  /** Where `serve` listens. */
  url: string;
  exit: Promise<Exit>;
  output(): string;
  /** Sends the signal and returns when it was sent. */
  signal(name: NodeJS.Signals): number;
}

const children = new Set<ChildProcess>();

/** Starts the built CLI and resolves once it says it is ready (its JSON log lines on stdout). */
async function start(command: 'serve' | 'worker', env: NodeJS.ProcessEnv): Promise<Started> {
  const child = spawn(NODE, [CLI, command], { env: { ...env, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let output = '';
  const exit = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal, at: performance.now() });
    }),
  );
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const ready = await readyEntry(
    child,
    (entry) => entry.msg === 'mediagate is listening' || entry.msg === 'mediagate worker is waiting for queued transcriptions',
    `mediagate ${command}`,
    () => output,
  );
  return {
    child,
    url: ready.url ?? '',
    exit,
    output: () => output,
    signal(name) {
      const at = performance.now();
      child.kill(name);
      return at;
    },
  };
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** performance.now() when the last byte arrived. */
  at: number;
}

/** One request through `agent`, so the connection outlives it when the agent keeps it alive. */
function request(
  agent: http.Agent | undefined,
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string; onSocket?: (s: import('node:net').Socket) => void } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent, method: opts.method ?? 'GET', headers: opts.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, at: performance.now() }));
    });
    req.on('socket', (s) => opts.onSocket?.(s));
    req.on('error', reject);
    req.end(opts.body);
  });
}

const until = (what: string, check: () => Promise<boolean> | boolean, ms = 20_000) =>
  waitFor(check, { describe: what, timeout: ms, interval: 100 });

/** Stop times measured here, printed at the end (the report of issue 8 quotes them). */
const measured: string[] = [];

/**
 * SIGTERM as an orchestrator sends it during a rolling restart: the built CLI, a fresh database
 * (the PostgreSQL DATABASE_URL names, or else an embedded one served by this test), real HTTP.
 */
describe('mediagate serve and worker stop cleanly on SIGTERM', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let dataDir: string;
  let site: FakeSite;
  let services: ReturnType<typeof createServices>;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'mediagate-shutdown-'));
    site = await startFakeSite();
    site.file('/m.mp4', makeMedia({ seconds: 2, video: true }), 'video/mp4');
    site.file('/talk.mp3', makeMedia({ seconds: 20 }), 'audio/mpeg');
    services = createServices(
      prepareConfig(loadConfig({ NODE_ENV: 'test', API_KEY_PEPPER: PEPPER, MEDIAGATE_DATA_DIR: dataDir })),
      db.orm,
      pino({ level: 'silent' }),
    );
  });
  afterEach(() => {
    for (const child of children) child.kill('SIGKILL');
  });
  afterAll(async () => {
    await services.close();
    await db.close();
    await site.close();
    rmSync(dataDir, { recursive: true, force: true });
    console.log(`stop times (2 cores, shared):\n${measured.map((m) => `  ${m}`).join('\n')}`);
  });

  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    ...process.env,
    NODE_ENV: 'test',
    API_KEY_PEPPER: PEPPER,
    HOST: '127.0.0.1',
    PORT: '0',
    MEDIAGATE_DATA_DIR: dataDir,
    DATABASE_URL: db.clientUrl,
    FETCH_ALLOW_HOSTS: site.hostPort,
    ...extra,
  });

  const account = async (credits = 10) => {
    const acc = await services.accounts.create(OPERATOR, { name: 'Shutdown', credits, membershipDays: 30 });
    return { accountId: acc.id, key: (await services.apiKeys.create(OPERATOR, acc.id, 'test')).key };
  };

  const kind = () => (db.embedded ? 'PGlite served by the test' : 'PostgreSQL');
  const sql = <T>(query: string, params: unknown[] = []) =>
    db.orm.em
      .fork()
      .getConnection()
      .execute<T[]>(query, params as never[]);

  /** The balance row, and the sums of the ledger that must equal it. */
  const ledger = async (accountId: string) => {
    const [b] = await sql<{ available: string; held: string }>(`select available, held from credit_balance where account_id = ?`, [
      accountId,
    ]);
    const [s] = await sql<{ a: string; h: string }>(
      `select coalesce(sum(available_delta), 0) as a, coalesce(sum(held_delta), 0) as h from credit_entry where account_id = ?`,
      [accountId],
    );
    return { available: Number(b.available), held: Number(b.held), entriesAvailable: Number(s.a), entriesHeld: Number(s.h) };
  };

  it('exits 0 at once with a keep-alive client and a subscription connected: the idle connection is closed, the subscription gets 1001', async () => {
    const { key } = await account();
    const server = await start('serve', env());
    const agent = new http.Agent({ keepAlive: true });
    let socket: import('node:net').Socket | undefined;
    const ready = await request(agent, `${server.url}/readyz`, { onSocket: (s) => (socket = s) });
    expect(ready.status).toBe(200);
    expect(ready.headers.connection).toBe('keep-alive');
    const keptAliveClosed = new Promise<void>((resolve) => socket!.once('close', () => resolve()));

    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${key}` } }));
    await new Promise<void>((resolve) => ws.once('message', (m) => JSON.parse(String(m)).type === 'connection_ack' && resolve()));
    const wsClosed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));

    const sent = server.signal('SIGTERM');
    const exit = await server.exit;
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(await wsClosed).toBe(1001);
    await keptAliveClosed;
    measured.push(`serve, ${kind()}, idle keep-alive + subscription: exit ${Math.round(exit.at - sent)} ms after SIGTERM`);
    expect(exit.at - sent).toBeLessThan(2000);
    agent.destroy();
  });

  it('lets a slow request in flight finish (charged once, then Connection: close), refuses new ones, and exits 0 right after it', async () => {
    const { accountId, key } = await account();
    let reached!: () => void;
    const slowReached = new Promise<void>((resolve) => (reached = resolve));
    site.route('/slow', (_req, res) => {
      reached();
      // Not synchronisation: the slow upstream under test, still answering after SIGTERM.
      setTimeout(() => res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE), 1500);
    });
    const server = await start('serve', env());
    // A second client, idle on its own keep-alive connection: closed at once, not after the slow one.
    const idleAgent = new http.Agent({ keepAlive: true });
    let idleSocket: import('node:net').Socket | undefined;
    expect((await request(idleAgent, `${server.url}/healthz`, { onSocket: (s) => (idleSocket = s) })).status).toBe(200);
    let idleClosedAt = 0;
    idleSocket!.once('close', () => (idleClosedAt = performance.now()));

    const agent = new http.Agent({ keepAlive: true });
    const parse = request(agent, `${server.url}/api/parse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ url: `${site.origin}/slow` }),
    });
    await slowReached;
    const sent = server.signal('SIGTERM');
    // The idle connection closed by the server says it has stopped listening (Fastify closes idle
    // connections and the listener together). A new connection now: refused, or answered 503 so a
    // load balancer drains this instance.
    await until('the idle keep-alive connection to close', () => idleClosedAt > 0, 5_000);
    const late = await request(undefined, `${server.url}/readyz`).then(
      (a) => a.status,
      (err: NodeJS.ErrnoException) => err.code,
    );
    expect([503, 'ECONNREFUSED', 'ECONNRESET']).toContain(late);

    const answer = await parse;
    expect(answer.status).toBe(200);
    expect(answer.headers.connection).toBe('close');
    expect(JSON.parse(answer.body)).toMatchObject({ status: 'SUCCEEDED', credits: { charged: 1, balance: 9 } });
    expect(idleClosedAt).toBeGreaterThan(0);
    expect(idleClosedAt).toBeLessThan(answer.at);

    const exit = await server.exit;
    expect(exit).toMatchObject({ code: 0, signal: null });
    measured.push(
      `serve, ${kind()}, slow request in flight: idle keep-alive closed ${Math.round(idleClosedAt - sent)} ms after SIGTERM, exit ${Math.round(exit.at - answer.at)} ms after the last response (${Math.round(exit.at - sent)} ms after SIGTERM)`,
    );
    expect(exit.at - answer.at).toBeLessThan(2000);
    expect(await ledger(accountId)).toEqual({ available: 9, held: 0, entriesAvailable: 9, entriesHeld: 0 });
    const captures = await sql<{ n: string }>(`select count(*) as n from credit_entry where account_id = ? and kind = 'CAPTURE'`, [
      accountId,
    ]);
    expect(Number(captures[0].n)).toBe(1);
    agent.destroy();
    idleAgent.destroy();
  });

  it('past a short grace period, a queued transcription goes back to the queue with its hold, and a second worker finishes it, charged once', async () => {
    const { accountId, key } = await account(10);
    // The first upload never gets its answer in time; the next ones are answered at once.
    let uploads = 0;
    const openai = await startFakeOpenAi({
      respond: () => (uploads++ === 0 ? { status: 200, body: verboseJsonFixture, delayMs: 60_000 } : undefined),
    });
    const providerEnv = env({
      SHUTDOWN_GRACE_SECONDS: '1',
      TRANSCRIBE_PROVIDERS: 'openai',
      OPENAI_BASE_URL: openai.baseUrl,
      OPENAI_API_KEY: 'sk-test',
    });
    try {
      const server = await start('serve', providerEnv);
      const queued = await request(undefined, `${server.url}/api/transcribe`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, prefer: 'respond-async' },
        body: JSON.stringify({ mediaUrl: `${site.origin}/talk.mp3` }),
      });
      expect(queued.status).toBe(202);
      const jobId = JSON.parse(queued.body).id as string;
      await until('the upload to the provider', () => openai.requests.length === 1);

      const sent = server.signal('SIGTERM');
      const exit = await server.exit;
      expect(exit).toMatchObject({ code: 0, signal: null });
      measured.push(`serve, ${kind()}, transcription running past a 1 s grace period: exit ${Math.round(exit.at - sent)} ms after SIGTERM`);
      expect(server.output()).toContain('grace period over');

      // Left for another worker: QUEUED again, its hold (the 20 s file's one minute) still held, nothing charged or released.
      const [job] = await sql<{ status: string; hold_amount: string; credits_charged: string }>(
        `select status, hold_amount, credits_charged from job where id = ?`,
        [jobId],
      );
      expect(job).toMatchObject({ status: 'QUEUED', credits_charged: '0' });
      const hold = Number(job.hold_amount);
      expect(hold).toBe(1);
      expect(await ledger(accountId)).toEqual({ available: 10 - hold, held: hold, entriesAvailable: 10 - hold, entriesHeld: hold });

      const worker = await start('worker', providerEnv);
      await until('the second worker to finish the job', async () => {
        const [row] = await sql<{ status: string }>(`select status from job where id = ?`, [jobId]);
        return row.status !== 'QUEUED' && row.status !== 'RUNNING';
      });
      const [done] = await sql<{ status: string; credits_charged: string }>(`select status, credits_charged from job where id = ?`, [
        jobId,
      ]);
      expect(done).toEqual({ status: 'SUCCEEDED', credits_charged: String(hold) });
      expect(await ledger(accountId)).toEqual({ available: 10 - hold, held: 0, entriesAvailable: 10 - hold, entriesHeld: 0 });
      const kinds = await sql<{ kind: string; n: string }>(
        `select kind, count(*) as n from credit_entry where job_id = ? group by kind order by kind`,
        [jobId],
      );
      expect(kinds.map((k) => [k.kind, Number(k.n)])).toEqual([
        ['CAPTURE', 1],
        ['HOLD', 1],
      ]);
      expect(openai.requests).toHaveLength(2);

      const workerSent = worker.signal('SIGTERM');
      const workerExit = await worker.exit;
      expect(workerExit).toMatchObject({ code: 0, signal: null });
      measured.push(`worker, ${kind()}, idle: exit ${Math.round(workerExit.at - workerSent)} ms after SIGTERM`);
      expect(workerExit.at - workerSent).toBeLessThan(2000);
    } finally {
      await openai.close();
    }
  }, 60_000);

  it('past the grace period, a request still waiting is answered 503 with its hold released, and the process exits 0', async () => {
    const { accountId, key } = await account();
    let reached!: () => void;
    const stuckReached = new Promise<void>((resolve) => (reached = resolve));
    site.route('/stuck', () => reached());
    const server = await start('serve', env({ SHUTDOWN_GRACE_SECONDS: '1' }));
    const parse = request(undefined, `${server.url}/api/parse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ url: `${site.origin}/stuck` }),
    });
    await stuckReached;
    const sent = server.signal('SIGTERM');
    const answer = await parse;
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'PROVIDER_UNAVAILABLE', requestId: expect.any(String) } });
    const exit = await server.exit;
    expect(exit).toMatchObject({ code: 0, signal: null });
    measured.push(
      `serve, ${kind()}, request stuck past a 1 s grace period: answered 503 ${Math.round(answer.at - sent)} ms, exit ${Math.round(exit.at - sent)} ms after SIGTERM`,
    );
    const [job] = await sql<{ status: string; error_code: string }>(`select status, error_code from job where account_id = ?`, [accountId]);
    expect(job).toEqual({ status: 'FAILED', error_code: 'PROVIDER_UNAVAILABLE' });
    expect(await ledger(accountId)).toEqual({ available: 10, held: 0, entriesAvailable: 10, entriesHeld: 0 });
  });

  it('exits at once, non-zero, on a second signal', async () => {
    const { key } = await account();
    let reached!: () => void;
    const hangReached = new Promise<void>((resolve) => (reached = resolve));
    // A page that never comes: the request would hold the stop for the whole grace period.
    site.route('/hang', () => reached());
    const server = await start('serve', env());
    void request(undefined, `${server.url}/api/parse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ url: `${site.origin}/hang` }),
    }).catch(() => undefined);
    await hangReached;
    server.signal('SIGTERM');
    await until('the first signal to be taken', () => /"msg":"shutting down"/.test(server.output()), 5_000);
    const second = server.signal('SIGINT');
    const exit = await server.exit;
    expect(exit).toMatchObject({ code: 1, signal: null });
    expect(exit.at - second).toBeLessThan(2000);
    expect(server.output()).toContain('second signal');
  });

  it('on the embedded database: operator commands work through the running server, it exits 0 at once, and what it wrote is on disk', async () => {
    const embeddedDir = mkdtempSync(join(tmpdir(), 'mediagate-shutdown-embedded-'));
    const embeddedEnv = env({ DATABASE_URL: '', MEDIAGATE_DATA_DIR: embeddedDir });
    const cli = async (...args: string[]) =>
      JSON.parse(
        (await run(NODE, [CLI, '--json', ...args], { env: { ...embeddedEnv, LOG_LEVEL: 'silent' } })).stdout.trim().split('\n').at(-1)!,
      );
    try {
      const server = await start('serve', embeddedEnv);
      // Through the running server's database socket, with the password from the data directory.
      const created = await cli('account', 'create', '--name', 'Embedded', '--credits', '3');
      expect(created).toMatchObject({ name: 'Embedded', credits: { available: 3, held: 0 } });
      const agent = new http.Agent({ keepAlive: true });
      expect((await request(agent, `${server.url}/readyz`)).status).toBe(200);

      const sent = server.signal('SIGTERM');
      const exit = await server.exit;
      expect(exit).toMatchObject({ code: 0, signal: null });
      measured.push(`serve, embedded PGlite, idle keep-alive: exit ${Math.round(exit.at - sent)} ms after SIGTERM`);
      expect(exit.at - sent).toBeLessThan(2000);
      expect(existsSync(join(embeddedDir, 'embedded-db.json'))).toBe(false);
      // The server is gone: the command opens the data directory itself and finds the account.
      const granted = await cli('credits', 'grant', created.id, '2');
      expect(granted).toEqual({ accountId: created.id, granted: 2, available: 5 });
      agent.destroy();
    } finally {
      rmSync(embeddedDir, { recursive: true, force: true });
    }
  }, 60_000);
});
