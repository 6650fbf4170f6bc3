import type { EntityManager } from '@mikro-orm/postgresql';
import { isUuid } from '../../db/sql-values.js';
import type { AppError } from '../../errors.js';
import type { GuardedHttpClient } from '../../net/guarded-client.js';
import { sendSignedWebhook } from '../../net/webhook-sender.js';
import { Job } from '../jobs/job.entity.js';
import { webhookPolicy } from './webhook.policy.js';
import type { Principal } from '../api-keys/api-key.service.js';
import type { JobQueue } from '../jobs/job-queue.js';
import { UnreadableWebhookSecret, type WebhookSecret, type WebhookSecretRepository } from './webhook-secret.repository.js';

export const WEBHOOK_EVENT_TYPES = ['job.succeeded', 'job.failed', 'job.canceled'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** What the queue carries for one event; the same message id on every retry, as Standard Webhooks asks. */
export interface WebhookMessage {
  jobId: string;
  type: WebhookEventType;
  eventId: string;
}

/** One delivery attempt, as the job shows it. */
export interface WebhookAttempt {
  attempt: number;
  eventId: string;
  eventType: WebhookEventType;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  createdAt: Date;
}

interface AttemptRow {
  attempt: number;
  event_id: string;
  event_type: WebhookEventType;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  created_at: Date | string;
}

/** The attempt's reason when the secret does not decrypt here: retried, so a restart with the right pepper delivers it. */
export const UNREADABLE_SECRET =
  'The event was not sent: this server cannot read the account’s webhook signing secret (a configuration error on our side). It will be retried.';

const ATTEMPT_SELECT = `select w.job_id, w.attempt, w.event_id, w.event_type, w.status_code, w.error, w.duration_ms, w.created_at from webhook_attempt w`;

function toAttempt(r: AttemptRow): WebhookAttempt {
  return {
    attempt: r.attempt,
    eventId: r.event_id,
    eventType: r.event_type,
    statusCode: r.status_code,
    error: r.error,
    durationMs: r.duration_ms,
    createdAt: new Date(r.created_at),
  };
}

export interface WebhookLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** The event a job's final status makes. */
export function eventTypeOf(status: string): WebhookEventType | null {
  if (status === 'SUCCEEDED') return 'job.succeeded';
  if (status === 'FAILED') return 'job.failed';
  if (status === 'CANCELED') return 'job.canceled';
  return null;
}

/**
 * Tells a caller's server that its job ended: a POST of `{ type, timestamp, data }` (data: the job as
 * GET /api/jobs/{id} shows it), signed per Standard Webhooks with the account's secret, through the
 * guarded client (the URL is the caller's, so the address rules hold at every attempt). Deliveries
 * ride the durable queue: a non-2xx answer, a timeout or a refused address is retried with
 * backoff for more than a day, and every attempt is recorded on the job.
 */
export class WebhookService {
  constructor(
    private readonly deps: {
      em: () => EntityManager;
      secrets: WebhookSecretRepository;
      client: GuardedHttpClient;
      queue?: JobQueue;
      log: WebhookLog;
      /** Time one attempt may take. */
      timeoutMs: number;
      /** Builds the job body as the REST door shows it. */
      view: (job: Job, attempts: WebhookAttempt[]) => object;
      /** The error for a caller whose key was revoked meanwhile (the key cache forgets it). */
      callerRevoked: (apiKeyId: string | null) => AppError;
    },
  ) {}

  /** The secret the caller's webhook receiver verifies deliveries with (keys scope; made on first read). */
  secretFor(principal: Principal): Promise<WebhookSecret> {
    webhookPolicy.secret(principal);
    return this.deps.secrets.get(principal.accountId);
  }

  /** A new signing secret (keys scope); 401 when the caller's key was revoked meanwhile. */
  async rotateSecret(principal: Principal): Promise<WebhookSecret> {
    webhookPolicy.secret(principal);
    const rotated = await this.deps.secrets.rotate(principal.accountId, principal.apiKeyId);
    if (!rotated) throw this.deps.callerRevoked(principal.apiKeyId);
    return rotated;
  }

  /** Whether deliveries can be made here (they need the durable queue). */
  get available(): boolean {
    return !!this.deps.queue;
  }

  /**
   * A job ended: queue its event when it has a webhook URL. `webhookUrl` undefined means "not known
   * here": it is read from the job. Never throws: a lost event is logged, the job's outcome stands.
   */
  async jobEnded(jobId: string, type: WebhookEventType, webhookUrl?: string | null): Promise<void> {
    try {
      const url = webhookUrl === undefined ? await this.urlOf(jobId) : webhookUrl;
      if (!url || !this.deps.queue) return;
      await this.deps.queue.sendWebhook({ jobId, type, eventId: `msg_${jobId.replace(/-/g, '')}` });
    } catch (err) {
      this.deps.log.warn({ err, jobId }, 'could not queue a webhook event');
    }
  }

  /** One attempt (the queue's handler): throws so the queue retries it later. */
  async deliver(message: WebhookMessage): Promise<void> {
    const job = await this.deps.em().findOne(Job, { id: message.jobId });
    const url = job?.input.webhookUrl;
    if (!job || typeof url !== 'string') return; // the job is gone: nothing to tell
    const attempts = await this.attempts(job.id);
    const attempt = attempts.filter((a) => a.eventId === message.eventId).length + 1;
    const timestamp = new Date();
    const payload = JSON.stringify({ type: message.type, timestamp: timestamp.toISOString(), data: this.deps.view(job, attempts) });
    const started = Date.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    const secret = await this.secretOf(job.accountId);
    if (secret === null) error = UNREADABLE_SECRET;
    else
      ({ statusCode, error } = await sendSignedWebhook(this.deps.client, {
        url,
        eventId: message.eventId,
        timestamp,
        payload,
        secret,
        timeoutMs: this.deps.timeoutMs,
      }));
    const durationMs = Date.now() - started;
    await this.deps
      .em()
      .getConnection()
      .execute(
        `insert into webhook_attempt (job_id, event_id, event_type, attempt, status_code, error, duration_ms) values (?, ?, ?, ?, ?, ?, ?)`,
        [job.id, message.eventId, message.type, attempt, statusCode, error, durationMs],
      );
    this.deps.log.info({ jobId: job.id, eventId: message.eventId, attempt, statusCode, error }, 'webhook delivery');
    if (error) throw new Error(error);
  }

  /** The attempts made for a job's events, oldest first, when the caller may see them (webhookPolicy.seesAttempts); else none. */
  async attemptsOf(principal: Principal, job: Pick<Job, 'id' | 'accountId' | 'input'>): Promise<WebhookAttempt[]> {
    if (typeof job.input.webhookUrl !== 'string' || !webhookPolicy.seesAttempts(principal, job.accountId)) return [];
    return this.attempts(job.id);
  }

  /** Every attempt made for a job's events, oldest first (the delivery's own count). */
  private async attempts(jobId: string): Promise<WebhookAttempt[]> {
    const rows = await this.deps.em().getConnection().execute<AttemptRow[]>(`${ATTEMPT_SELECT} where w.job_id = ? order by w.id`, [jobId]);
    return rows.map(toAttempt);
  }

  /**
   * The attempts of several jobs in one query, each job's oldest first, keyed by job id. With
   * `onlyAccount`, only that account's jobs' attempts are read.
   */
  async attemptsForJobs(principal: Principal, jobIds: readonly string[]): Promise<Map<string, WebhookAttempt[]>> {
    const onlyAccount = webhookPolicy.readMany(principal);
    const byJob = new Map<string, WebhookAttempt[]>();
    const wanted = jobIds.filter(isUuid);
    if (!wanted.length) return byJob;
    const rows = await this.deps
      .em()
      .getConnection()
      .execute<(AttemptRow & { job_id: string })[]>(
        `${ATTEMPT_SELECT} join job j on j.id = w.job_id where w.job_id in (?) ${onlyAccount === null ? '' : 'and j.account_id = ?'} order by w.id`,
        [wanted, ...(onlyAccount === null ? [] : [onlyAccount])],
      );
    for (const r of rows) {
      const list = byJob.get(r.job_id) ?? [];
      list.push(toAttempt(r));
      byJob.set(r.job_id, list);
    }
    return byJob;
  }

  /** The account's signing secret; null when it does not decrypt here (the repository has logged why): nothing is sent unsigned. */
  private async secretOf(accountId: string): Promise<string | null> {
    try {
      return (await this.deps.secrets.get(accountId)).secret;
    } catch (err) {
      if (err instanceof UnreadableWebhookSecret) return null;
      throw err;
    }
  }

  private async urlOf(jobId: string): Promise<string | null> {
    const rows = await this.deps
      .em()
      .getConnection()
      .execute<{ url: string | null }[]>(`select input->>'webhookUrl' as url from job where id = ?`, [jobId]);
    return rows[0]?.url ?? null;
  }
}
