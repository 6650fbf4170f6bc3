import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import { loadConfig, type Config } from '../../src/config.js';
import { checkAgainstOpenApi } from './openapi-check.js';
import { prepareConfig } from '../../src/local-config.js';
import { notificationsOf, type Notifications } from '../../src/db/notifications.js';
import { JobQueue } from '../../src/modules/jobs/job-queue.js';
import { createHttpApp, createServices, startWorkers, type Services } from '../../src/root.js';
import { CreditHistoryRepository } from '../../src/modules/credits/credit-history.repository.js';
import { JobRepository } from '../../src/modules/jobs/job.repository.js';
import { WebhookSecretRepository } from '../../src/modules/webhooks/webhook-secret.repository.js';
import { createTestDatabase, type TestDatabase, type TestDatabaseKind } from './test-database.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { GqlError } from './bodies.js';

export const TEST_PEPPER = 'test-pepper-0123456789abcdef0123456789';
/** The metrics token of a harness in production (createHarness). */
export const TEST_METRICS_TOKEN = 'test-metrics-token-0123456789';

/** An HTTP answer, read whole. */
export interface TestResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
  /** The body parsed as JSON, as `T` (name it; see bodies.ts for the contract's bodies). */
  json<T = unknown>(): T;
}

/** A GraphQL answer: `data` as the query names it, the errors in the contract's shape. */
export interface GqlAnswer<T> {
  status: number;
  data: T;
  errors?: GqlError[];
}

export interface Harness {
  app: FastifyInstance;
  services: Services;
  /** The rows behind the services, for tests that look at what was stored (the doors never get these). */
  repositories: { jobs: JobRepository; history: CreditHistoryRepository; webhookSecrets: WebhookSecretRepository };
  config: Config;
  clientUrl: string;
  /** The database's notifications, as this app hears them. */
  notifications: Notifications;
  /** The job queue, where the test asked for one. */
  queue?: JobQueue;
  /** An account with a key; membership and credits as asked. */
  account(opts?: {
    credits?: number;
    member?: boolean;
    roles?: string[];
    scopes?: string[];
  }): Promise<{ accountId: string; key: string; keyId: string }>;
  /** The server's base URL on loopback. */
  url: string;
  request(method: string, path: string, opts?: { headers?: Record<string, string>; body?: string }): Promise<TestResponse>;
  rest(path: string, body: unknown, key?: string | null, headers?: Record<string, string>): Promise<TestResponse>;
  /** POST /graphql as a JSON body, answered whole (status, headers, body): for tests of the HTTP answer itself. */
  graphqlRequest(query: string, variables?: Record<string, unknown>, key?: string | null): Promise<TestResponse>;
  gql<T = unknown>(query: string, variables?: Record<string, unknown>, key?: string | null): Promise<GqlAnswer<T>>;
  balance(accountId: string): Promise<{ available: number; held: number }>;
  /** Ledger invariants: entries sum to the balance; nothing negative. */
  ledgerSums(accountId: string): Promise<{ available: number; held: number }>;
  /** Runs SQL on the test database (to look at rows, or age them). */
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  /** Kills every connection to the test database (the embedded one needs `severable`); returns how many. */
  severDatabaseConnections(): Promise<number>;
  /** The database under this harness (another harness may share it: see createHarness's `shareDatabaseOf`). */
  database: TestDatabase;
  close(): Promise<void>;
}

/** Boots the real app (both doors, real database) with test configuration; requests go over loopback HTTP. */
export async function createHarness(
  env: Record<string, string> = {},
  logger: Logger = pino({ level: 'silent' }),
  options: {
    queue?: boolean;
    database?: TestDatabaseKind;
    severable?: boolean;
    /**
     * Another harness's database instead of a new one (a test comparing configurations on one
     * database: the app, services and settings are this harness's own). Closing this harness leaves
     * the database to its owner.
     */
    shareDatabaseOf?: Harness;
    /**
     * With `shareDatabaseOf` on PostgreSQL: a listening connection of this harness's own, as a second
     * instance has, rather than the owner's (the embedded database hands its notifications to its one process).
     */
    ownListener?: boolean;
  } = {},
): Promise<Harness> {
  const config = prepareConfig(
    loadConfig({
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      API_KEY_PEPPER: TEST_PEPPER,
      MEDIAGATE_DATA_DIR: '/tmp/mediagate-test-unused',
      // Production refuses to serve /metrics openly: a test of production gets a token unless it names its own setting.
      ...(env.NODE_ENV === 'production' ? { METRICS_TOKEN: TEST_METRICS_TOKEN } : {}),
      ...env,
    }),
  );
  // After the configuration: a refused configuration leaves no database behind.
  const shared = options.shareDatabaseOf?.database;
  const db = shared ?? (await createTestDatabase(options.database, { severable: options.severable }));
  if (!shared) await db.notifications.start(logger);
  const ownNotifications = shared && options.ownListener && !shared.embedded ? notificationsOf({ clientUrl: db.clientUrl }) : null;
  await ownNotifications?.start(logger);
  const notifications = ownNotifications ?? db.notifications;
  // The job queue (pg-boss) only where a test queues work: it adds its own schema and polling.
  const queue = options.queue ? new JobQueue(db.clientUrl, logger, config.webhooks.retryDelaySeconds) : undefined;
  await queue?.start();
  const services = createServices(config, db.orm, logger, { queue, notifications });
  if (queue) await startWorkers(services, queue);
  const app = await createHttpApp(services, db.orm);
  const em = () => db.orm.em.fork();
  // Real HTTP on loopback: the same parsers, limits and hooks a client meets.
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address() as AddressInfo;
  const base = `http://127.0.0.1:${address.port}`;
  const request = async (
    method: string,
    path: string,
    opts: { headers?: Record<string, string>; body?: string } = {},
  ): Promise<TestResponse> => {
    const res = await fetch(base + path, { method, headers: opts.headers, body: opts.body });
    const body = await res.text();
    // Every success body of the REST door is held to the served OpenAPI document.
    checkAgainstOpenApi({ method, path, status: res.status, contentType: res.headers.get('content-type'), body });
    return {
      statusCode: res.status,
      headers: Object.fromEntries(res.headers.entries()),
      body,
      json: <T>() => JSON.parse(body) as T,
    };
  };

  const harness: Harness = {
    app,
    services,
    repositories: {
      jobs: new JobRepository(em),
      history: new CreditHistoryRepository(em),
      webhookSecrets: new WebhookSecretRepository(em, config.apiKeyPepper, logger),
    },
    config,
    clientUrl: db.clientUrl,
    notifications,
    database: db,
    queue,
    async account(opts = {}) {
      const acc = await services.accounts.create(OPERATOR, {
        name: 'Test account',
        credits: opts.credits ?? 10,
        membershipDays: opts.member === false ? undefined : 30,
        roles: opts.roles,
      });
      const created = await services.apiKeys.create(OPERATOR, acc.id, 'test', opts.scopes);
      return { accountId: acc.id, key: created.key, keyId: created.apiKey.id };
    },
    url: base,
    request,
    rest(path, body, key, headers = {}) {
      return request('POST', path, {
        headers: {
          'content-type': 'application/json',
          ...(key ? { authorization: `Bearer ${key}` } : {}),
          ...headers,
        },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
    graphqlRequest(query, variables, key) {
      return request('POST', '/graphql', {
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify({ query, variables }),
      });
    },
    async gql(query, variables, key) {
      const res = await harness.graphqlRequest(query, variables, key);
      const body = res.json<{ data: never; errors?: GqlError[] }>();
      return { status: res.statusCode, data: body.data, errors: body.errors };
    },
    balance: (accountId) => services.ledger.balance(accountId),
    async ledgerSums(accountId) {
      const rows = await db.orm.em
        .fork()
        .getConnection()
        .execute<{ a: string; h: string }[]>(
          `select coalesce(sum(available_delta), 0) as a, coalesce(sum(held_delta), 0) as h from credit_entry where account_id = ?`,
          [accountId],
        );
      return { available: Number(rows[0].a), held: Number(rows[0].h) };
    },
    sql: (query, params = []) => db.orm.em.fork().getConnection().execute(query, params),
    severDatabaseConnections: () => db.severConnections(),
    async close() {
      await app.close();
      await queue?.stop();
      await services.close();
      await ownNotifications?.close();
      if (!shared) await db.close();
    },
  };
  return harness;
}

/**
 * A harness whose transcriptions go to a fake OpenAI and run on the job queue, allowed to fetch from
 * the fake site: what most transcription tests start from. `env` adds to or overrides those settings.
 */
export function transcribingHarness(
  site: { hostPort: string },
  openai: { baseUrl: string },
  options: { env?: Record<string, string>; logger?: Logger; database?: TestDatabaseKind } = {},
): Promise<Harness> {
  return createHarness(
    { FETCH_ALLOW_HOSTS: site.hostPort, TRANSCRIBE_PROVIDERS: 'openai', OPENAI_BASE_URL: openai.baseUrl, ...options.env },
    options.logger,
    { queue: true, database: options.database },
  );
}
