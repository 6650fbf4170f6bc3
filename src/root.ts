import type { MikroORM } from '@mikro-orm/postgresql';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config, Settings } from './config.js';
import { initOrm, migrate, openDatabase, type Database, type OpenOptions } from './db/database.js';
import { HotPool } from './db/hot-pool.js';
import { notificationsOf, type Notifications } from './db/notifications.js';
import { createMetrics } from './metrics.js';
import { AccountService } from './modules/accounts/account.service.js';
import { OidcVerifier } from './modules/accounts/oidc.verifier.js';
import { ApiKeyCache } from './modules/api-keys/api-key.cache.js';
import { ApiKeyService } from './modules/api-keys/api-key.service.js';
import { Authenticator } from './modules/auth.js';
import { AccountUsageRepository } from './modules/credits/account-usage.repository.js';
import { CreditHistoryRepository } from './modules/credits/credit-history.repository.js';
import { CreditHistoryService } from './modules/credits/credit-history.service.js';
import { CreditUsageRepository } from './modules/credits/credit-usage.repository.js';
import { LedgerService } from './modules/credits/ledger.service.js';
import { TaskHistoryRepository } from './modules/credits/task-history.repository.js';
import { ENTITIES } from './modules/entities.js';
import { JobQueue } from './modules/jobs/job-queue.js';
import { JobUpdates } from './modules/jobs/job-updates.js';
import { JobRepository } from './modules/jobs/job.repository.js';
import { JobService } from './modules/jobs/job.service.js';
import { toJobBody } from './modules/jobs/job.view.js';
import { TaskLedger } from './modules/tasks/task-ledger.js';
import { TaskRunner } from './modules/tasks/task-runner.js';
import { ParseService } from './modules/parse/parse.service.js';
import { SessionRepository } from './modules/sessions/session.repository.js';
import { SessionService } from './modules/sessions/session.service.js';
import { StreamLimits } from './modules/streams/stream-limits.js';
import { StreamRepository } from './modules/streams/stream.repository.js';
import { StreamService } from './modules/streams/stream.service.js';
import { StreamTokens } from './modules/streams/stream-token.js';
import { TranscriptionService } from './modules/transcription/transcription.service.js';
import { WebhookSecretRepository } from './modules/webhooks/webhook-secret.repository.js';
import { WebhookService, eventTypeOf } from './modules/webhooks/webhook.service.js';
import { GuardedHttpClient } from './net/guarded-client.js';
import { CircuitBreakers } from './providers/circuit-breakers.js';
import { buildParseProviders, buildTranscriptionProviders } from './providers/provider-registry.js';
import type { Services } from './modules/services.js';

/**
 * The composition root: the one place that builds the product, by constructor injection in
 * dependency order. `mediagate serve`, `mediagate worker`, the operator commands and the tests all
 * start here; the entity list (to the database) and the resolver list (to the GraphQL door) are
 * handed down from here.
 */

export type { Services } from './modules/services.js';

/** What a process hands the services besides the configuration and the ORM. */
export interface ServiceParts {
  /** The job queue; without it (operator commands) nothing is queued or delivered. */
  queue?: JobQueue;
  /** The database's (Database.notifications); without them, as in one-off commands, watchers re-read every few seconds. */
  notifications?: Notifications;
  /** The database's pool for the ledger and key lookups (Database.hot); without it, one as large as the ORM's is opened here and closed with the services. */
  hot?: HotPool;
  /** The replica's ORM (Database.read) for credit history, usage, the CSV export and account lists; without it they read `orm`. */
  read?: MikroORM;
}

/** Opens the configured database with the domain's entities (see openDatabase). */
export function openProductDatabase(config: Settings, options: Omit<OpenOptions, 'entities'> = {}): Promise<Database> {
  return openDatabase(config, { ...options, entities: ENTITIES });
}

/** The ORM with the domain's entities on one connection string (tests and operators' tools). */
export function openOrm(clientUrl: string, poolSize: number): Promise<MikroORM> {
  return initOrm(clientUrl, poolSize, ENTITIES);
}

export function createServices(config: Config, orm: MikroORM, log: Logger, parts: ServiceParts = {}): Services {
  const { queue } = parts;
  const notifications = parts.notifications ?? notificationsOf(null);
  // A fresh EntityManager for every unit of work: no identity map is shared between requests.
  const em = () => orm.em.fork();
  // Analysts' reads: nothing that spends, nor reads its own writes, goes there.
  const readEm = parts.read ? () => parts.read!.em.fork() : em;
  const ownHot = parts.hot ? null : new HotPool(orm.config.get('clientUrl')!, { size: orm.config.get('pool')?.max ?? 1, log });
  const hot = parts.hot ?? ownHot!;

  const metrics = createMetrics();
  const client = new GuardedHttpClient({ allowHosts: config.fetchAllowHosts });
  const keyCache = new ApiKeyCache(config.apiKeyCacheMs, notifications);
  // A hold refused for a revoked key means this instance's cache missed the news.
  const ledger = new LedgerService(hot);
  const tasks = new TaskLedger(hot, ledger, {
    batchWindowMs: config.ledgerBatchWindowMs,
    onKeyRevoked: (apiKeyId) => keyCache.forget({ apiKeyId }),
  });
  const apiKeys = new ApiKeyService(em, config.apiKeyPepper, hot, keyCache, config.apiKeysPerAccount);
  const accounts = new AccountService(em, ledger, readEm);
  // One verifier for Bearer tokens and the account page's exchange: one key cache, one discovery.
  const oidc = config.oidc ? new OidcVerifier(config.oidc, log.child({ component: 'oidc' })) : null;
  const sessions = new SessionService(
    new SessionRepository(em),
    accounts,
    { pepper: config.apiKeyPepper, publicUrl: config.publicUrl, production: config.env === 'production', ...config.sessions },
    oidc,
  );
  const webhookLog = log.child({ component: 'webhooks' });
  const webhooks = new WebhookService({
    em,
    secrets: new WebhookSecretRepository(em, config.apiKeyPepper, webhookLog),
    client,
    queue,
    log: webhookLog,
    timeoutMs: config.webhooks.timeoutMs,
    view: toJobBody,
    callerRevoked: (apiKeyId) => apiKeys.callerRevoked(apiKeyId),
  });
  const runner = new TaskRunner({
    ledger: tasks,
    log,
    notifications,
    observe: (operation, outcome, charged) => {
      metrics.tasks.inc({ operation, outcome });
      if (charged) metrics.creditsCharged.inc({ operation }, charged);
    },
    onEnded: (jobId, status, webhookUrl) => void webhooks.jobEnded(jobId, eventTypeOf(status)!, webhookUrl),
  });
  const jobRows = new JobRepository(em);
  const failoverLog = log.child({ component: 'providers' });
  // Sealed with a key of their own derived from the pepper: valid on every instance that shares it.
  const streamTokens = new StreamTokens(config.apiKeyPepper);
  const breakers = new CircuitBreakers();
  return {
    config,
    log,
    metrics,
    accounts,
    apiKeys,
    auth: new Authenticator(apiKeys, oidc ? { verifier: oidc, accounts } : null, sessions),
    sessions,
    ledger,
    tasks,
    jobs: new JobService(jobRows, runner, tasks),
    jobUpdates: new JobUpdates(jobRows, notifications, config.subscriptionsPerAccount, {
      read: () => metrics.jobWatchReads.inc(),
      watching: ({ jobs, subscribers }) => {
        metrics.jobWatchers.set(jobs);
        metrics.jobSubscribers.set(subscribers);
      },
    }),
    notifications,
    creditHistory: new CreditHistoryService(
      new CreditHistoryRepository(readEm),
      new TaskHistoryRepository(readEm),
      new CreditUsageRepository(readEm),
      new AccountUsageRepository(readEm),
    ),
    parse: new ParseService({
      config,
      runner,
      client,
      log: failoverLog,
      breakers,
      providers: buildParseProviders(config, client, metrics),
      streamTokens,
    }),
    streams: new StreamService({
      tokens: streamTokens,
      repository: new StreamRepository(hot),
      limits: new StreamLimits(config.streams),
      client,
      bounds: {
        maxBytes: config.streams.maxBytes,
        maxMs: config.streams.maxMs,
        allowHosts: config.fetchAllowHosts,
        ffmpegPath: config.ffmpegPath,
      },
      onBytes: (n) => metrics.streamedBytes.inc(n),
      log: log.child({ component: 'streams' }),
    }),
    transcription: new TranscriptionService({
      config,
      runner,
      client,
      log: failoverLog,
      breakers,
      queue,
      providers: buildTranscriptionProviders(config),
      webhooks,
    }),
    webhooks,
    close: async () => {
      breakers.shutdown();
      await apiKeys.close();
      await client.close();
      await ownHot?.end();
    },
  };
}

/**
 * The HTTP server with both doors over these services, the GraphQL door on the product's resolvers.
 * Loaded when first asked for: an operator command (`mediagate account create`) never loads
 * Fastify, Apollo Server or the resolvers (a quarter of a second of its start here).
 */
export async function createHttpApp(services: Services, orm: MikroORM): Promise<FastifyInstance> {
  const [{ buildApp }, { RESOLVERS }] = await Promise.all([import('./app.js'), import('./graphql/resolvers.js')]);
  return buildApp({ services, orm, resolvers: [...RESOLVERS] });
}

/** The queue's workers for this process: queued transcriptions, and webhook deliveries apart from them. */
export async function startWorkers(services: Services, queue: JobQueue): Promise<void> {
  // WORKER_CONCURRENCY=0: this process leaves queued transcriptions to separate workers.
  if (services.config.workerConcurrency > 0)
    await queue.work((jobId) => services.transcription.runJob(jobId), services.config.workerConcurrency);
  await queue.workWebhooks((message) => services.webhooks.deliver(message));
}

/** A process's parts: the database (migrated, listening), its job queue and workers, the services. */
export interface Composed {
  db: Database;
  queue: JobQueue;
  services: Services;
}

/**
 * What `serve` and `worker` start from: opens the database, migrates (one process at a time on
 * PostgreSQL), listens for notifications, starts the durable queue and its workers.
 */
export async function composeProcess(config: Config, log: Logger, options: { announce?: boolean } = {}): Promise<Composed> {
  const db = await openProductDatabase(config, { announce: options.announce });
  const applied = await migrate(db.orm, { lock: !db.embedded });
  if (applied.length) log.info({ migrations: applied }, 'database migrated');
  await db.notifications.start(log);
  // Queued transcriptions: durable in PostgreSQL, worked by every serving instance.
  const queue = new JobQueue(db.clientUrl, log, config.webhooks.retryDelaySeconds);
  await queue.start();
  const services = createServices(config, db.orm, log, { queue, notifications: db.notifications, hot: db.hot, read: db.read });
  await startWorkers(services, queue);
  return { db, queue, services };
}

/** What an operator command runs on: the migrated database and the services, with no queue. */
export async function composeOperator(config: Config, log: Logger): Promise<{ db: Database; services: Services; close(): Promise<void> }> {
  const db = await openProductDatabase(config);
  try {
    await migrate(db.orm, { lock: !db.embedded });
  } catch (err) {
    await db.close();
    throw err;
  }
  const services = createServices(config, db.orm, log, { hot: db.hot });
  return {
    db,
    services,
    async close() {
      await services.close();
      await db.close();
    },
  };
}
