import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Notifications } from '../db/notifications.js';
import type { Metrics } from '../metrics.js';
import type { AccountService } from './accounts/account.service.js';
import type { ApiKeyService } from './api-keys/api-key.service.js';
import type { Authenticator } from './auth.js';
import type { CreditHistoryService } from './credits/credit-history.service.js';
import type { LedgerService } from './credits/ledger.service.js';
import type { JobUpdates } from './jobs/job-updates.js';
import type { JobService } from './jobs/job.service.js';
import type { ParseService } from './parse/parse.service.js';
import type { TaskLedger } from './tasks/task-ledger.js';
import type { SessionService } from './sessions/session.service.js';
import type { StreamService } from './streams/stream.service.js';
import type { TranscriptionService } from './transcription/transcription.service.js';
import type { WebhookService } from './webhooks/webhook.service.js';

/** Everything a transport may call, built once per process: services only, no repositories. */
export interface Services {
  config: Config;
  log: Logger;
  metrics: Metrics;
  accounts: AccountService;
  apiKeys: ApiKeyService;
  auth: Authenticator;
  /** The account area's login links and cookie sessions. */
  sessions: SessionService;
  /** Balances and grants. */
  ledger: LedgerService;
  /** The job's state machine: each transition one statement, moving its credits with it. */
  tasks: TaskLedger;
  /** Reading, listing and cancelling jobs; the sweeper. */
  jobs: JobService;
  /** Jobs as they change (the jobUpdated subscription). */
  jobUpdates: JobUpdates;
  /** What the database says changed (the WebSocket door re-checks its callers when their key or account did). */
  notifications: Notifications;
  /** The ledger as callers read it: entries, per task, usage, the CSV export. */
  creditHistory: CreditHistoryService;
  parse: ParseService;
  transcription: TranscriptionService;
  /** The parse answers' stream URLs (/api/streams/{token}). */
  streams: StreamService;
  webhooks: WebhookService;
  close(): Promise<void>;
}
