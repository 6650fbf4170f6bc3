import type { Notifications } from '../../db/notifications.js';
import { isAppError } from '../../errors.js';
import type { Job } from './job.entity.js';
import type { JobRepository } from './job.repository.js';

const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELED']);
/** How often a watched parse is re-read. */
const PARSE_RECHECK_MS = 500;

/** The changes of one job, as they happen; `return()` (a client leaving) frees it at once. */
export type JobWatch = AsyncIterableIterator<Job> & { return(): Promise<IteratorResult<Job>> };

/**
 * Jobs as they change, pushed by the database (the `mediagate_job` notification), so changes made by
 * any instance are seen. The row is re-read on each notification: it, not the notification, is the truth.
 */
export class JobUpdates {
  constructor(
    private readonly jobs: JobRepository,
    private readonly notifications: Notifications,
  ) {}

  /**
   * The job now (NOT_FOUND if the caller cannot see it), then each change of its status or progress,
   * ending with its final state. It re-reads on each notification for the job, after the listener
   * reconnects (notifications may have been missed), and, as a backstop, after `recheckMs` of silence.
   */
  async watch(accountId: string, id: string): Promise<JobWatch> {
    const wake = new Wakeup();
    // Listening before the first read: a change between the two is not lost.
    const unsubscribe = [
      this.notifications.on('mediagate_job', (n) => n.id === id && wake.poke()),
      this.notifications.onReconnect(wake.poke),
    ];
    let stopped = false;
    const stop = () => {
      stopped = true;
      unsubscribe.forEach((off) => off());
      wake.poke();
    };
    let job: Job;
    try {
      job = await this.jobs.get(accountId, id);
    } catch (err) {
      stop();
      throw err;
    }
    let sent = false;
    const done = (): IteratorResult<Job> => {
      stop();
      return { done: true, value: undefined };
    };
    const next = async (): Promise<IteratorResult<Job>> => {
      if (!sent) {
        sent = true;
        return { done: false, value: job };
      }
      while (!stopped && !TERMINAL.has(job.status)) {
        // Parses are not notified (see Migration20261124000000_notify): they end within seconds, so re-read often.
        await wake.wait(
          job.operation === 'PARSE' ? Math.min(PARSE_RECHECK_MS, this.notifications.recheckMs) : this.notifications.recheckMs,
        );
        if (stopped) break;
        let latest: Job;
        try {
          latest = await this.jobs.get(accountId, id);
        } catch (err) {
          // The database being away for a moment ends nothing: the next wake-up reads again.
          if (isAppError(err)) throw err;
          continue;
        }
        const changed = latest.status !== job.status || latest.progress !== job.progress;
        job = latest;
        if (changed) return { done: false, value: job };
      }
      return done();
    };
    const changes: JobWatch = {
      next,
      return: async () => done(),
      [Symbol.asyncIterator]: () => changes,
    };
    return changes;
  }
}

/** A wait that ends early when poked; a poke while nobody waits is kept for the next wait. */
class Wakeup {
  private poked = false;
  private wakeWaiter: (() => void) | null = null;

  poke = (): void => {
    this.poked = true;
    this.wakeWaiter?.();
  };

  async wait(ms: number): Promise<void> {
    if (!this.poked) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(wake, ms);
        function wake() {
          clearTimeout(timer);
          resolve();
        }
        this.wakeWaiter = wake;
      });
      this.wakeWaiter = null;
    }
    this.poked = false;
  }
}
