import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { prepareConfig } from '../../src/local-config.js';
import { createServices, type Services } from '../../src/root.js';
import { startFakeOpenAi } from '../fakes/openai.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { page } from '../support/factories.js';
import { gatewayProcessEnv } from '../support/gateway-env.js';
import { makeMedia } from '../support/media.js';
import { createTestDatabase } from '../support/test-database.js';
import { GatewayProcess, type Exit } from './gateway-process.js';
import { send, type Reply } from '../support/send.js';
import type { ErrorBody, GqlBody } from '../support/bodies.js';

/** Timing of the gateway under test: short, so that deadlines and sweeps happen within a run. */
export const TIMING = {
  parseTimeoutSeconds: 4,
  transcribeTimeoutSeconds: 8,
  sweepIntervalSeconds: 1,
  /**
   * Slack on "no job open past its deadline plus one sweep interval": the sweeper's timer and its
   * statement run on two cores shared with the test, the fakes and (embedded) the database.
   */
  sweepGraceSeconds: 2,
};

/** The media the model transcribes, by length: a price of 1, 2 and 3 credits per started minute. */
export const MEDIA = [
  { path: '/m20.mp3', seconds: 20, price: 1 },
  { path: '/m70.mp3', seconds: 70, price: 2 },
  { path: '/m130.mp3', seconds: 130, price: 3 },
] as const;

export type Door = 'rest' | 'graphql';

/** What a parse or a waited-for transcription answers, as far as the model reads it. */
type Money = { id: string; credits: { charged: number; balance: number } };
/** A queued transcription as the start answers it. */
type Started = { id: string; status: string; creditsHeld: number };

/** What one request through a door came back with, in the model's terms. */
export type Answer =
  | { kind: 'ok'; status: number; jobId: string; charged: number; balance: number; body: Record<string, unknown> }
  | { kind: 'accepted'; jobId: string; status: string; held: number }
  | { kind: 'error'; status: number; code: string; details?: Record<string, unknown> }
  /** The connection died before an answer (the gateway crashed). */
  | { kind: 'lost'; error: string };

/** Counts for the end-of-run report. */
export interface Stats {
  runs: number;
  commands: Record<string, number>;
  requests: number;
  outcomes: Record<string, number>;
  crashes: Record<string, number>;
  restarts: number;
  invariantChecks: number;
  invariantAssertions: number;
  replaysChecked: number;
  /** Per gateway instance, by its index. */
  instances: { requests: number; crashes: number; restarts: number }[];
}

const PARSE_FIELDS = `id status url provider media { url kind } credits { charged balance }`;
const TRANSCRIPTION_FIELDS = `id status mediaUrl language durationSeconds text segments { index start end text } provider credits { charged balance }`;

/**
 * Everything the model test acts on: a fresh database (DATABASE_URL's PostgreSQL, else an embedded
 * PGlite served on a socket outside the gateways, so it outlives their crashes), `instances`
 * gateway child processes on it (MODEL_INSTANCES, each `serve` with its own queue worker, as N
 * instances behind a load balancer), the fake site and OpenAI-compatible server they reach, SQL for
 * the checks, and the operator's own services for what only an operator does (accounts, grants,
 * memberships). Requests go to the instances in turn unless a command names one, so a job started
 * through one is looked at, canceled and replayed through another.
 */
export class World {
  readonly gateways: GatewayProcess[] = [];
  readonly stats: Stats;
  private requestSeq = 0;
  private requestTurn = 0;
  private crashTurn = 0;

  private constructor(
    private readonly db: Awaited<ReturnType<typeof createTestDatabase>>,
    readonly sql: pg.Pool,
    readonly operator: Services,
    readonly site: FakeSite,
    private readonly openai: Awaited<ReturnType<typeof startFakeOpenAi>>,
    private readonly env: Record<string, string>,
    private readonly dataDir: string,
    readonly instances: number,
  ) {
    this.stats = {
      runs: 0,
      commands: {},
      requests: 0,
      outcomes: {},
      crashes: {},
      restarts: 0,
      invariantChecks: 0,
      invariantAssertions: 0,
      replaysChecked: 0,
      instances: Array.from({ length: instances }, () => ({ requests: 0, crashes: 0, restarts: 0 })),
    };
  }

  get embedded(): boolean {
    return this.db.embedded;
  }

  static async create(instances = 1): Promise<World> {
    const site = await startFakeSite();
    page(site, '/ok', { og: { video: 'https://cdn.example/ok.mp4', 'video:type': 'video/mp4' } });
    // A page whose server fails: the builtin provider fails with it (502 PROVIDER_ERROR).
    site.route('/broken', (_req, res) => void res.writeHead(500, { 'content-type': 'text/plain' }).end('upstream exploded'));
    for (const m of MEDIA) site.file(m.path, makeMedia({ seconds: m.seconds }), 'audio/mpeg');
    // Media that never finishes downloading: its job stays open until it is canceled or swept.
    site.endless('/endless.mp3', 'audio/mpeg');
    const openai = await startFakeOpenAi();
    let db: Awaited<ReturnType<typeof createTestDatabase>>;
    try {
      db = await createTestDatabase();
    } catch (err) {
      await site.close();
      await openai.close();
      throw err;
    }
    // Shared by the instances: with DATABASE_URL and API_KEY_PEPPER set, a gateway keeps nothing there.
    const dataDir = mkdtempSync(join(tmpdir(), 'mediagate-model-'));
    const env: Record<string, string> = {
      ...gatewayProcessEnv({ databaseUrl: db.clientUrl, dataDir, site, openai, timing: TIMING }),
      WORKER_CONCURRENCY: '4',
      // The embedded database's socket server takes 16 connections, and a gateway that reaches it
      // through DATABASE_URL sizes its pools for PostgreSQL: two took 13 at their peak, the test
      // holds 3, and the server ends the rest ("Connection terminated unexpectedly", a 503). It runs
      // one statement at a time whatever the number: one ledger connection each, as a gateway takes
      // on an embedded database of its own (11 at the peak, measured).
      ...(db.embedded && instances > 1 ? { DATABASE_POOL_SIZE: '1' } : {}),
      // PGlite hands a NOTIFY only to the connection that committed it and to listeners in the
      // process that serves it, so a gateway that reaches it through DATABASE_URL never hears that the
      // operator (this process) or another instance lapsed a membership or revoked a key: its key
      // cache would let the key spend as before for API_KEY_CACHE_SECONDS. On PostgreSQL it hears.
      ...(db.embedded ? { API_KEY_CACHE_SECONDS: '0' } : {}),
    };
    const config = prepareConfig(loadConfig({ ...env, LOG_LEVEL: 'silent' }));
    const operator = createServices(config, db.orm, pino({ level: 'silent' }));
    // One connection: on the embedded database every connection is one more session of the same PGlite.
    const sql = new pg.Pool({ connectionString: db.clientUrl, max: 1 });
    const world = new World(db, sql, operator, site, openai, env, dataDir, instances);
    try {
      // One after the other: two cores, and each start pays node's and the gateway's loading.
      for (let i = 0; i < instances; i++) world.gateways.push(await GatewayProcess.start(env));
    } catch (err) {
      await world.close();
      throw err;
    }
    return world;
  }

  /** A new gateway on the same database in place of instance `i`, after it died (its port may differ). */
  async restart(i: number): Promise<void> {
    if (this.gateways[i].alive) throw new Error(`restart: instance ${i} still runs`);
    this.gateways[i] = await GatewayProcess.start(this.env);
    this.stats.restarts += 1;
    this.stats.instances[i].restarts += 1;
  }

  /** The instance the next request goes to when its command names none: each in turn. */
  nextInstance(): number {
    const i = this.requestTurn % this.instances;
    this.requestTurn += 1;
    return i;
  }

  /** The instance the next crash kills: each in turn, so that every one dies and comes back. */
  nextVictim(): number {
    const i = this.crashTurn % this.instances;
    this.crashTurn += 1;
    return i;
  }

  /** Waits up to `ms` for any of these instances to end. */
  async anyExit(indices: number[], ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
    try {
      await Promise.race([...indices.map((i) => this.gateways[i].exited), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The last lines each instance wrote (for a failure's message), each cut to its last `chars`. */
  lastLines(chars?: number): string {
    const tail = (g: GatewayProcess) => (chars === undefined ? g.lastLines() : g.lastLines().slice(-chars));
    if (this.instances === 1) return tail(this.gateways[0]);
    return this.gateways.map((g, i) => `[instance ${i}]\n${tail(g)}`).join('\n');
  }

  /** Ends the gateways gracefully and frees everything. */
  async close(): Promise<Exit[]> {
    const exits = await Promise.all(this.gateways.filter((g) => g.alive).map((g) => g.stop()));
    await this.sql.end();
    await this.operator.close();
    await this.db.close();
    await this.site.close();
    await this.openai.close();
    rmSync(this.dataDir, { recursive: true, force: true });
    return exits;
  }

  nextRequestId(): string {
    this.requestSeq += 1;
    return `model-${process.pid}-${this.requestSeq}`;
  }

  private async http<T>(
    instance: number,
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: unknown,
  ): Promise<Reply<T>> {
    this.stats.requests += 1;
    this.stats.instances[instance].requests += 1;
    return send<T>(this.gateways[instance].url, method, path, headers, body);
  }

  /** A GraphQL operation over HTTP to one instance (the next in turn unless named); the first error's code, or the data. */
  async gql<T>(
    secret: string,
    query: string,
    variables: Record<string, unknown>,
    requestId = this.nextRequestId(),
    instance = this.nextInstance(),
  ): Promise<{ data: T; code?: string; details?: Record<string, unknown>; status: number } | { lost: string }> {
    // A request refused before GraphQL runs (by the HTTP layer) carries the REST error body instead.
    const res = await this.http<GqlBody<T> & Partial<ErrorBody>>(
      instance,
      'POST',
      '/graphql',
      { authorization: `Bearer ${secret}`, 'x-request-id': requestId },
      { query, variables },
    );
    if ('lost' in res) return res;
    const error = res.json?.errors?.[0];
    // A request refused before GraphQL runs (by the HTTP layer) carries the REST error body.
    const code = error?.extensions?.code ?? res.json?.error?.code ?? (res.status === 200 ? undefined : `HTTP_${res.status}`);
    return { status: res.status, data: res.json?.data, code, details: error?.extensions?.details ?? res.json?.error?.details };
  }

  /** A parse or a waited-for transcription through one door of one instance, with an optional Idempotency-Key. */
  async work(
    instance: number,
    door: Door,
    operation: 'parse' | 'transcribe',
    secret: string,
    body: Record<string, string>,
    idempotencyKey: string | null,
    requestId: string,
  ): Promise<Answer> {
    if (door === 'rest') {
      const headers: Record<string, string> = { authorization: `Bearer ${secret}`, 'x-request-id': requestId };
      if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
      const res = await this.http<Money & Partial<ErrorBody>>(instance, 'POST', `/api/${operation}`, headers, body);
      if ('lost' in res) return { kind: 'lost', error: res.lost };
      if (res.status === 200)
        return {
          kind: 'ok',
          status: 200,
          jobId: res.json.id,
          charged: res.json.credits.charged,
          balance: res.json.credits.balance,
          body: res.json,
        };
      return { kind: 'error', status: res.status, code: res.json?.error?.code ?? `HTTP_${res.status}`, details: res.json?.error?.details };
    }
    const input = operation === 'parse' ? 'ParseInput' : 'TranscribeInput';
    const fields = operation === 'parse' ? PARSE_FIELDS : TRANSCRIPTION_FIELDS;
    const res = await this.gql<Record<string, Money>>(
      secret,
      `mutation($i: ${input}!, $k: String) { ${operation}(input: $i, idempotencyKey: $k) { ${fields} } }`,
      { i: body, k: idempotencyKey },
      requestId,
      instance,
    );
    if ('lost' in res) return { kind: 'lost', error: res.lost };
    if (res.code) return { kind: 'error', status: res.status, code: res.code, details: res.details };
    const r = res.data[operation];
    return { kind: 'ok', status: res.status, jobId: r.id, charged: r.credits.charged, balance: r.credits.balance, body: r };
  }

  /** Queues a transcription through one instance (REST with Prefer: respond-async, or GraphQL startTranscription). */
  async start(instance: number, door: Door, secret: string, mediaUrl: string, requestId: string): Promise<Answer> {
    if (door === 'rest') {
      const res = await this.http<Started & Partial<ErrorBody>>(
        instance,
        'POST',
        '/api/transcribe',
        { authorization: `Bearer ${secret}`, 'x-request-id': requestId, prefer: 'respond-async' },
        { mediaUrl },
      );
      if ('lost' in res) return { kind: 'lost', error: res.lost };
      if (res.status === 202) return { kind: 'accepted', jobId: res.json.id, status: res.json.status, held: res.json.creditsHeld };
      return { kind: 'error', status: res.status, code: res.json?.error?.code ?? `HTTP_${res.status}`, details: res.json?.error?.details };
    }
    const res = await this.gql<{ startTranscription: Started }>(
      secret,
      `mutation($i: TranscribeInput!) { startTranscription(input: $i) { id status creditsHeld } }`,
      { i: { mediaUrl } },
      requestId,
      instance,
    );
    if ('lost' in res) return { kind: 'lost', error: res.lost };
    if (res.code) return { kind: 'error', status: res.status, code: res.code, details: res.details };
    const j = res.data.startTranscription;
    return { kind: 'accepted', jobId: j.id, status: j.status, held: j.creditsHeld };
  }

  /** A job as its owner sees it through GraphQL. */
  async job(secret: string, id: string): Promise<{ status: string; creditsHeld: number; creditsCharged: number } | null> {
    const res = await this.gql<{ job: { status: string; creditsHeld: number; creditsCharged: number } }>(
      secret,
      `query($id: ID!) { job(id: $id) { status creditsHeld creditsCharged } }`,
      { id },
    );
    return 'lost' in res || res.code ? null : res.data.job;
  }

  count(map: Record<string, number>, key: string, n = 1): void {
    map[key] = (map[key] ?? 0) + n;
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
