import { PgBoss } from 'pg-boss';

const QUEUE = 'transcription';
const WEBHOOKS = 'webhook';

/** A webhook event to deliver (see modules/webhooks). */
export interface QueuedWebhook {
  jobId: string;
  type: 'job.succeeded' | 'job.failed' | 'job.canceled';
  eventId: string;
}

/** How deliveries are retried: exponential from `delaySeconds`, each wait at most `maxDelaySeconds`. */
export interface WebhookRetry {
  delaySeconds: number;
  maxDelaySeconds: number;
  limit: number;
}

/**
 * Retries that keep trying for more than a day: waits of 15 s, 30 s, ... (pg-boss halves and jitters
 * each step) up to 3 h, 17 retries in all: at least 25 hours before an event is given up.
 */
export const DEFAULT_WEBHOOK_RETRY: WebhookRetry = { delaySeconds: 30, maxDelaySeconds: 3 * 3600, limit: 17 };

/** How a handler's run of a queued job ended: settled (whatever the outcome), or given back to the queue. */
export type QueuedRun = 'settled' | 'handed-back';

export interface QueueLog {
  error(obj: object, msg: string): void;
}

/**
 * The durable hand-off of queued tasks (pg-boss, in the same PostgreSQL): a job id sent here is
 * worked by some instance's worker even if the one that accepted it dies. The job row and its hold
 * stay the truth; pg-boss only delivers the id.
 */
export class JobQueue {
  private readonly boss: PgBoss;
  private started = false;
  private readonly webhookRetry: WebhookRetry;

  constructor(
    connectionString: string,
    log: QueueLog,
    /** WEBHOOK_RETRY_DELAY_SECONDS: the first wait between webhook attempts. */
    webhookRetryDelaySeconds = DEFAULT_WEBHOOK_RETRY.delaySeconds,
  ) {
    this.webhookRetry = { ...DEFAULT_WEBHOOK_RETRY, delaySeconds: webhookRetryDelaySeconds };
    // Two connections: on the embedded database every query is serialized anyway.
    this.boss = new PgBoss({ connectionString, max: 2 });
    this.boss.on('error', (err) => log.error({ err }, 'job queue error'));
  }

  async start(): Promise<void> {
    if (this.started) return;
    await this.boss.start();
    await this.boss.createQueue(QUEUE);
    await this.boss.createQueue(WEBHOOKS);
    this.started = true;
  }

  async send(jobId: string): Promise<void> {
    // No pg-boss retries: a failed task released its hold; the caller decides whether to try again.
    await this.boss.send(QUEUE, { jobId }, { retryLimit: 0 });
  }

  /**
   * Works queued ids with the handler, `concurrency` at a time in this process. A job the handler gives
   * back (a stopping worker past its grace period: the row is QUEUED again, its hold intact) is sent
   * again, for another worker.
   */
  async work(handler: (jobId: string) => Promise<QueuedRun | undefined>, concurrency = 2): Promise<void> {
    await this.boss.work<{ jobId: string }>(
      QUEUE,
      { batchSize: 1, pollingIntervalSeconds: 1, localConcurrency: concurrency },
      async (jobs) => {
        for (const job of jobs) {
          if ((await handler(job.data.jobId)) === 'handed-back') await this.send(job.data.jobId);
        }
      },
    );
  }

  /** Queues one webhook event; the same event id is queued once. */
  async sendWebhook(message: QueuedWebhook): Promise<void> {
    const { delaySeconds, maxDelaySeconds, limit } = this.webhookRetry;
    await this.boss.send(WEBHOOKS, message, {
      retryLimit: limit,
      retryDelay: delaySeconds,
      retryBackoff: true,
      retryDelayMax: maxDelaySeconds,
      singletonKey: message.eventId,
    });
  }

  /** Delivers webhook events, `concurrency` at a time, apart from the transcription workers: a slow receiver never holds up a job. */
  async workWebhooks(handler: (message: QueuedWebhook) => Promise<void>, concurrency = 4): Promise<void> {
    await this.boss.work<QueuedWebhook>(
      WEBHOOKS,
      { batchSize: 1, pollingIntervalSeconds: 1, localConcurrency: concurrency },
      async (jobs) => {
        for (const job of jobs) await handler(job.data);
      },
    );
  }

  /** The queues this process works, each with when its worker last finished asking for work (pg-boss's wip data). */
  workers(): { queue: string; lastFetchedOn: number | null }[] {
    return this.boss.getWipData().map((w) => ({ queue: w.name, lastFetchedOn: w.lastFetchedOn }));
  }

  /**
   * Takes no more work and resolves once the handlers running in this process have finished (pg-boss's
   * offWork); a stopping process races it against its grace period.
   */
  async drain(): Promise<void> {
    if (!this.started) return;
    await Promise.all([QUEUE, WEBHOOKS].map((name) => this.boss.offWork(name, { wait: true })));
  }

  /**
   * Stops pg-boss: handlers still running after `timeoutMs` have their pg-boss jobs failed (a webhook
   * delivery is then retried later; a transcription's row and hold are the runner's to settle).
   */
  async stop(timeoutMs = 10_000): Promise<void> {
    if (this.started) await this.boss.stop({ graceful: true, timeout: timeoutMs });
    this.started = false;
  }
}
