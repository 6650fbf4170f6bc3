import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { HotPool } from './db/hot-pool.js';
import { notificationsOf, type Notifications } from './db/notifications.js';
import { Metrics } from './metrics.js';
import { AccountService } from './modules/accounts/account.service.js';
import { OidcVerifier } from './modules/accounts/oidc.verifier.js';
import { Authenticator } from './modules/auth.js';
import { ApiKeyCache } from './modules/api-keys/api-key.cache.js';
import { ApiKeyService } from './modules/api-keys/api-key.service.js';
import { AccountUsageRepository } from './modules/credits/account-usage.repository.js';
import { CreditHistoryRepository } from './modules/credits/credit-history.repository.js';
import { TaskHistoryRepository } from './modules/credits/task-history.repository.js';
import { CreditUsageRepository } from './modules/credits/credit-usage.repository.js';
import { LedgerService } from './modules/credits/ledger.service.js';
import type { JobQueue } from './modules/jobs/job-queue.js';
import { JobUpdates } from './modules/jobs/job-updates.js';
import { JobRepository } from './modules/jobs/job.repository.js';
import { JobService } from './modules/jobs/job.service.js';
import { Job } from './modules/jobs/job.entity.js';
import { toJobBody } from './modules/jobs/job.view.js';
import { TaskRunner } from './modules/jobs/task-runner.js';
import { ParseService } from './modules/parse/parse.service.js';
import { SessionRepository } from './modules/sessions/session.repository.js';
import { SessionService } from './modules/sessions/session.service.js';
import { TranscriptionService } from './modules/transcription/transcription.service.js';
import { WebhookSecretRepository } from './modules/webhooks/webhook-secret.repository.js';
import { WebhookService, eventTypeOf } from './modules/webhooks/webhook.service.js';
import { GuardedHttpClient } from './net/guarded-client.js';
import { CircuitBreakers } from './providers/circuit-breakers.js';
import { buildParseProviders, buildTranscriptionProviders } from './providers/provider-registry.js';

/** Everything a transport may call, built once per process. */
export interface Services {
  config: Config;
  log: Logger;
  metrics: Metrics;
  accounts: AccountService;
  apiKeys: ApiKeyService;
  auth: Authenticator;
  /** The account area's login links and cookie sessions. */
  sessions: SessionService;
  ledger: LedgerService;
  jobs: JobRepository;
  jobControl: JobService;
  /** Jobs as they change (the jobUpdated subscription). */
  jobUpdates: JobUpdates;
  /** What the database says changed (the WebSocket door re-checks its callers when their key or account did). */
  notifications: Notifications;
  history: CreditHistoryRepository;
  /** The credit history with one row per task (the account page's). */
  taskHistory: TaskHistoryRepository;
  usage: CreditUsageRepository;
  accountUsage: AccountUsageRepository;
  parse: ParseService;
  transcription: TranscriptionService;
  webhooks: WebhookService;
  webhookSecrets: WebhookSecretRepository;
  close(): Promise<void>;
}

/** The queue's workers for this process: queued transcriptions, and webhook deliveries apart from them. */
export async function startWorkers(services: Services, queue: JobQueue): Promise<void> {
  // WORKER_CONCURRENCY=0: this process leaves queued transcriptions to separate workers.
  if (services.config.workerConcurrency > 0) await queue.work((jobId) => services.transcription.runJob(jobId), services.config.workerConcurrency);
  await queue.workWebhooks((message) => services.webhooks.deliver(message));
}

/**
 * `notifications`: the database's (Database.notifications); without them, as in one-off commands, watchers re-read every few seconds.
 * `hot`: the database's pool for the ledger and key lookups (Database.hot); without it, one as large as the ORM's is opened here and closed with the services.
 * `read`: the replica's ORM (Database.read) for credit history, usage, the CSV export and account lists; without it they read `orm`.
 */
export function createServices(
  config: Config,
  orm: MikroORM,
  log: Logger,
  queue?: JobQueue,
  notifications: Notifications = notificationsOf(null),
  hot?: HotPool,
  read?: MikroORM,
): Services {
  // A fresh EntityManager for every unit of work: no identity map is shared between requests.
  const em = () => orm.em.fork();
  // Analysts' reads: nothing that spends, nor reads its own writes, goes there.
  const readEm = read ? () => read.em.fork() : em;
  const ownHot = hot ? null : new HotPool(orm.config.get('clientUrl')!, { size: orm.config.get('pool')?.max ?? 1, log });
  const hotPool = hot ?? ownHot!;
  const ledger = new LedgerService(hotPool, { batchWindowMs: config.ledgerBatchWindowMs });
  const client = new GuardedHttpClient({ allowHosts: config.fetchAllowHosts });
  const metrics = new Metrics();
  const accounts = new AccountService(em, ledger, readEm);
  const apiKeys = new ApiKeyService(em, config.apiKeyPepper, hotPool, new ApiKeyCache(config.apiKeyCacheMs, notifications));
  // A hold refused for a revoked key means this instance's cache missed the news.
  ledger.onKeyRevoked = (apiKeyId) => apiKeys.forgetKey(apiKeyId);
  // One verifier for Bearer tokens and the account page's exchange: one key cache, one discovery.
  const oidc = config.oidc ? new OidcVerifier(config.oidc, log.child({ component: 'oidc' })) : null;
  const sessions = new SessionService(
    new SessionRepository(em),
    accounts,
    { pepper: config.apiKeyPepper, publicUrl: config.publicUrl, production: config.env === 'production', ...config.sessions },
    oidc,
  );
  const jobs = new JobRepository(em);
  const runner = new TaskRunner(
    ledger,
    log,
    (operation, outcome, charged) => {
      metrics.tasks.inc({ operation, outcome });
      if (charged) metrics.creditsCharged.inc({ operation }, charged);
    },
    notifications,
  );
  const webhookLog = log.child({ component: 'webhooks' });
  const webhookSecrets = new WebhookSecretRepository(em, config.apiKeyPepper, webhookLog);
  const webhooks = new WebhookService({
    em,
    secrets: webhookSecrets,
    client,
    queue,
    log: webhookLog,
    timeoutMs: config.webhooks.timeoutMs,
    view: (job, attempts) => toJobBody(job, attempts) as unknown as Record<string, unknown>,
    loadJob: (jobId) => em().findOne(Job, { id: jobId }),
  });
  runner.onEnded = (jobId, status, webhookUrl) => void webhooks.jobEnded(jobId, eventTypeOf(status)!, webhookUrl);
  const failoverLog = log.child({ component: 'providers' });
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
    jobs,
    jobControl: new JobService(jobs, runner, ledger),
    jobUpdates: new JobUpdates(jobs, notifications),
    notifications,
    history: new CreditHistoryRepository(readEm),
    taskHistory: new TaskHistoryRepository(readEm),
    usage: new CreditUsageRepository(readEm),
    accountUsage: new AccountUsageRepository(readEm),
    parse: new ParseService({ config, runner, client, log: failoverLog, breakers, providers: buildParseProviders(config, client, metrics) }),
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
    webhookSecrets,
    close: async () => {
      breakers.shutdown();
      await apiKeys.close();
      await client.close();
      await ownHot?.end();
    },
  };
}
