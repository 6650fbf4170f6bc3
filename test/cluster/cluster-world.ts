import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { prepareConfig } from '../../src/local-config.js';
import { openOrm, createServices, type Services } from '../../src/root.js';
import { startFakeOpenAi } from '../fakes/openai.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { GatewayProcess } from '../model/gateway-process.js';
import { invariantProblems } from '../model/ledger-invariants.js';
import { TIMING } from '../model/ledger-world.js';
import { pageHtml } from '../support/factories.js';
import { gatewayProcessEnv } from '../support/gateway-env.js';
import { makeMedia } from '../support/media.js';
import { waitFor } from '../support/wait-for.js';
import { send } from '../support/send.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { ErrorBody, GqlBody } from '../support/bodies.js';

const run = promisify(execFile);
const NODE = join(process.cwd(), 'node_modules/.bin/node');
const CLI = join(process.cwd(), 'dist/cli/main.js');

/** Polls `probe` every `everyMs` until it holds (waitFor); returns how long that took. */
export async function until(what: string, probe: () => Promise<boolean> | boolean, withinMs = 15_000, everyMs = 25): Promise<number> {
  const started = Date.now();
  await waitFor(probe, { describe: what, timeout: withinMs, interval: everyMs });
  return Date.now() - started;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** The cluster test needs a real PostgreSQL: several processes share it. */
export function adminUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('npm run test:cluster needs DATABASE_URL (a PostgreSQL it may create databases on)');
  return url;
}

/** A new, empty database on DATABASE_URL's server (the gateways migrate it); dropped by `drop`. */
export async function createEmptyDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `mediagate_cluster_${randomBytes(6).toString('hex')}`;
  const admin = async (statement: string) => {
    const c = new pg.Client({ connectionString: adminUrl() });
    await c.connect();
    try {
      await c.query(statement);
    } finally {
      await c.end();
    }
  };
  await admin(`create database ${name}`);
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) };
}

/** A redis-server of this test's own on a free port, stopped and started again at will. */
export class RedisServer {
  private child: ChildProcess | null = null;
  private constructor(readonly port: number) {}

  static async start(): Promise<RedisServer> {
    const redis = new RedisServer(await freePort());
    await redis.resume();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async cli(...args: string[]): Promise<string> {
    return (await run('redis-cli', ['-p', String(this.port), ...args])).stdout.trim();
  }

  async resume(): Promise<void> {
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    await until('redis-server answers', async () => (await this.cli('ping').catch(() => '')) === 'PONG', 5_000, 50);
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = null;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
}

/**
 * A GraphQL operation over HTTP to one gateway; `T` is the data it names. A request refused before
 * GraphQL runs (rate limits, by the HTTP layer) carries the REST error body instead.
 */
export const gql = <T = unknown>(base: string, key: string, query: string, variables: Record<string, unknown> = {}) =>
  send<GqlBody<T> & Partial<ErrorBody>>(base, 'POST', '/graphql', { authorization: `Bearer ${key}` }, { query, variables });

export interface ClusterOptions {
  /** Extra environment for every process (rate limits, ...). */
  env?: Record<string, string>;
  /** Start the separate `mediagate worker` (default true). */
  worker?: boolean;
}

/**
 * Two `mediagate serve` processes (WORKER_CONCURRENCY=0) and one `mediagate worker` on one fresh
 * PostgreSQL database and one Redis, with the fake site and OpenAI-compatible provider they reach,
 * SQL for the checks, and an operator's services for accounts and keys.
 */
export class Cluster {
  gateways: GatewayProcess[] = [];
  worker: GatewayProcess | null = null;
  sql!: pg.Pool;
  operator!: Services;
  private closeOperator: () => Promise<void> = async () => undefined;
  /** While true, the fake provider answers only after a minute (a request to cancel). */
  stallProvider = false;

  private constructor(
    readonly db: { url: string; drop(): Promise<void> },
    readonly redis: RedisServer,
    readonly site: FakeSite,
    readonly openai: Awaited<ReturnType<typeof startFakeOpenAi>>,
    readonly env: Record<string, string>,
    private readonly dataDir: string,
  ) {}

  static async start(options: ClusterOptions = {}): Promise<Cluster> {
    const site = await startFakeSite();
    // A page that declares all a parse needs (no probe of the media).
    const page = pageHtml({
      og: { video: `${site.origin}/clip.mp4`, 'video:type': 'video/mp4', 'video:width': '160', 'video:height': '120' },
      meta: { 'video:duration': '2' },
    });
    site.page('/ok', page);
    site.route('/broken', (_req, res) => void res.writeHead(500, { 'content-type': 'text/plain' }).end('upstream exploded'));
    // The same page after 400 ms: requests in flight when a gateway dies.
    // Not synchronisation: a slow upstream, so requests are in flight when an instance dies.
    site.route('/slow', (_req, res) => void setTimeout(() => res.writeHead(200, { 'content-type': 'text/html' }).end(page), 400));
    site.file('/m20.mp3', makeMedia({ seconds: 20 }), 'audio/mpeg');
    site.file('/m70.mp3', makeMedia({ seconds: 70 }), 'audio/mpeg');
    let cluster: Cluster | null = null;
    const openai = await startFakeOpenAi({
      respond: () => (cluster?.stallProvider ? { status: 500, body: {}, delayMs: 60_000 } : undefined),
    });
    const db = await createEmptyDatabase();
    const redis = await RedisServer.start();
    const dataDir = mkdtempSync(join(tmpdir(), 'mediagate-cluster-'));
    const env: Record<string, string> = {
      // Generous transcription timeout: two cores transcode every transcription of the mixed load (ffmpeg) while the test runs.
      ...gatewayProcessEnv({ databaseUrl: db.url, dataDir, site, openai, timing: { ...TIMING, transcribeTimeoutSeconds: 90 } }),
      REDIS_URL: redis.url,
      ...options.env,
    };
    cluster = new Cluster(db, redis, site, openai, env, dataDir);
    try {
      cluster.gateways = await Promise.all([cluster.startGateway(), cluster.startGateway()]);
      if (options.worker !== false) cluster.worker = await GatewayProcess.start({ ...env, WORKER_CONCURRENCY: '2' }, 60_000, 'worker');
      const orm = await openOrm(db.url, 2);
      cluster.operator = createServices(prepareConfig(loadConfig({ ...env, LOG_LEVEL: 'silent' })), orm, pino({ level: 'silent' }));
      cluster.closeOperator = async () => {
        await cluster!.operator.close();
        await orm.close(true);
      };
      cluster.sql = new pg.Pool({ connectionString: db.url, max: 2 });
    } catch (err) {
      await cluster.close();
      throw err;
    }
    return cluster;
  }

  /** One more `mediagate serve` on the same database and Redis, leaving the queue to the worker. */
  startGateway(): Promise<GatewayProcess> {
    return GatewayProcess.start({ ...this.env, WORKER_CONCURRENCY: '0' });
  }

  get a(): string {
    return this.gateways[0].url;
  }

  get b(): string {
    return this.gateways[1].url;
  }

  /** An account with a member's key (all scopes) and `credits`. */
  async account(credits: number): Promise<{ accountId: string; key: string; keyId: string }> {
    const acc = await this.operator.accounts.create(OPERATOR, { name: 'Cluster account', credits, membershipDays: 30 });
    const created = await this.operator.apiKeys.create(OPERATOR, acc.id, 'cluster');
    return { accountId: acc.id, key: created.key, keyId: created.apiKey.id };
  }

  /** Runs the operator CLI (`mediagate --json ...`) on this cluster's database; its JSON answer. */
  async cli<T = unknown>(...args: string[]): Promise<T> {
    const { stdout } = await run(NODE, [CLI, '--json', ...args], {
      env: { PATH: process.env.PATH ?? '', ...this.env, LOG_LEVEL: 'silent' },
    });
    return JSON.parse(stdout) as T;
  }

  /** Balance and held of an account, read by SQL. */
  async balance(accountId: string): Promise<{ available: number; held: number }> {
    const { rows } = await this.sql.query(`select available::int, held::int from credit_balance where account_id = $1`, [accountId]);
    return rows[0] ?? { available: 0, held: 0 };
  }

  /** The ledger invariants over the whole database, in one snapshot (none broken: []). */
  async ledgerProblems(): Promise<string[]> {
    const client = await this.sql.connect();
    try {
      await client.query('begin isolation level repeatable read read only');
      const problems = await invariantProblems(client);
      await client.query('commit');
      return problems;
    } finally {
      client.release();
    }
  }

  /** Waits until no job of these accounts is open (the worker or the sweep settled them). */
  async settled(accountIds: string[], withinMs = 30_000): Promise<void> {
    await until(
      'every job settled',
      async () =>
        (await this.sql.query(`select 1 from job where account_id = any($1) and status in ('QUEUED', 'RUNNING') limit 1`, [accountIds]))
          .rowCount === 0,
      withinMs,
      100,
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.gateways, ...(this.worker ? [this.worker] : [])].map((p) => (p.alive ? p.stop() : null)));
    await this.sql?.end();
    await this.closeOperator();
    await this.db.drop();
    await this.redis.stop();
    await this.site.close();
    await this.openai.close();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
