import { PgBoss } from 'pg-boss';

const QUEUE = 'transcription';

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

  constructor(connectionString: string, log: QueueLog) {
    // Two connections: on the embedded database every query is serialized anyway.
    this.boss = new PgBoss({ connectionString, max: 2 });
    this.boss.on('error', (err) => log.error({ err }, 'job queue error'));
  }

  async start(): Promise<void> {
    if (this.started) return;
    await this.boss.start();
    await this.boss.createQueue(QUEUE);
    this.started = true;
  }

  async send(jobId: string): Promise<void> {
    // No pg-boss retries: a failed task released its hold; the caller decides whether to try again.
    await this.boss.send(QUEUE, { jobId }, { retryLimit: 0 });
  }

  /** Works queued ids with the handler, `concurrency` at a time in this process. */
  async work(handler: (jobId: string) => Promise<void>, concurrency = 2): Promise<void> {
    await this.boss.work<{ jobId: string }>(QUEUE, { batchSize: 1, pollingIntervalSeconds: 1, localConcurrency: concurrency }, async (jobs) => {
      for (const job of jobs) await handler(job.data.jobId);
    });
  }

  async stop(): Promise<void> {
    if (this.started) await this.boss.stop({ graceful: true, timeout: 10_000 });
    this.started = false;
  }
}
