import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { Metrics } from './metrics.js';
import { AccountService } from './modules/accounts/account.service.js';
import { OidcVerifier } from './modules/accounts/oidc.verifier.js';
import { Authenticator } from './modules/auth.js';
import { ApiKeyService } from './modules/api-keys/api-key.service.js';
import { CreditHistoryRepository } from './modules/credits/credit-history.repository.js';
import { CreditUsageRepository } from './modules/credits/credit-usage.repository.js';
import { LedgerService } from './modules/credits/ledger.service.js';
import type { JobQueue } from './modules/jobs/job-queue.js';
import { JobRepository } from './modules/jobs/job.repository.js';
import { JobService } from './modules/jobs/job.service.js';
import { TaskRunner } from './modules/jobs/task-runner.js';
import { ParseService } from './modules/parse/parse.service.js';
import { TranscriptionService } from './modules/transcription/transcription.service.js';
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
  ledger: LedgerService;
  jobs: JobRepository;
  jobControl: JobService;
  history: CreditHistoryRepository;
  usage: CreditUsageRepository;
  parse: ParseService;
  transcription: TranscriptionService;
  close(): Promise<void>;
}

export function createServices(config: Config, orm: MikroORM, log: Logger, queue?: JobQueue): Services {
  // A fresh EntityManager for every unit of work: no identity map is shared between requests.
  const em = () => orm.em.fork();
  const ledger = new LedgerService(em);
  const client = new GuardedHttpClient({ allowHosts: config.fetchAllowHosts });
  const metrics = new Metrics();
  const accounts = new AccountService(em, ledger);
  const apiKeys = new ApiKeyService(em, config.apiKeyPepper);
  const jobs = new JobRepository(em);
  const runner = new TaskRunner(ledger, log, (operation, outcome, charged) => {
    metrics.tasks.inc({ operation, outcome });
    if (charged) metrics.creditsCharged.inc({ operation }, charged);
  });
  const failoverLog = log.child({ component: 'providers' });
  const breakers = new CircuitBreakers();
  return {
    config,
    log,
    metrics,
    accounts,
    apiKeys,
    auth: new Authenticator(apiKeys, config.oidc ? { verifier: new OidcVerifier(config.oidc), accounts } : null),
    ledger,
    jobs,
    jobControl: new JobService(jobs, runner),
    history: new CreditHistoryRepository(em),
    usage: new CreditUsageRepository(em),
    parse: new ParseService({ config, runner, client, log: failoverLog, breakers, providers: buildParseProviders(config, client) }),
    transcription: new TranscriptionService({
      config,
      runner,
      client,
      log: failoverLog,
      breakers,
      queue,
      providers: buildTranscriptionProviders(config),
    }),
    close: async () => {
      breakers.shutdown();
      await client.close();
    },
  };
}
