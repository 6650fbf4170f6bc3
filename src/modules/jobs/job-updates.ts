import type { Notifications } from '../../db/notifications.js';
import { AppError } from '../../errors.js';
import type { Job } from './job.entity.js';
import type { JobRepository } from './job.repository.js';
import type { Principal } from '../principal.js';
import { jobPolicy } from './job.policy.js';

const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELED']);
/** How often a watched parse is re-read. */
const PARSE_RECHECK_MS = 500;

/** The changes of one job, as they happen; `return()` (a client leaving) frees it at once. */
export type JobWatch = AsyncIterableIterator<Job> & { return(): Promise<IteratorResult<Job>> };

/** What the watchers tell the metrics: each read of a watched job, and how many jobs and subscribers are watched now. */
export interface JobWatchObserver {
  read(): void;
  watching(state: { jobs: number; subscribers: number }): void;
}

const noObserver: JobWatchObserver = { read: () => undefined, watching: () => undefined };

const notFound = () => new AppError('NOT_FOUND', 'No such job.');

/**
 * Jobs as they change, pushed by the database (the `mediagate_job` notification), so changes made by
 * any instance are seen. One watcher per job id in this process, however many subscribe: it re-reads
 * the row once per notification (the row, not the notification, is the truth) and hands the result
 * to every subscriber, so a change costs one read whether one or a thousand follow the job. An
 * account runs at most `perAccount` subscriptions at once here; one more is RATE_LIMITED.
 */
export class JobUpdates {
  private readonly watchers = new Map<string, JobWatcher>();
  private readonly perAccountRunning = new Map<string, number>();
  private subscribers = 0;

  constructor(
    private readonly jobs: JobRepository,
    private readonly notifications: Notifications,
    private readonly perAccount = Number.POSITIVE_INFINITY,
    private readonly observer: JobWatchObserver = noObserver,
  ) {}

  /**
   * The job now (NOT_FOUND if the caller cannot see it), then each change of its status or progress,
   * ending with its final state. The job's watcher re-reads on each notification for the job, after
   * the listener reconnects (notifications may have been missed), and, as a backstop, after
   * `recheckMs` of silence.
   */
  async watch(principal: Principal, id: string): Promise<JobWatch> {
    jobPolicy.read(principal);
    const { accountId } = principal;
    // Counted before any wait, so a burst of subscribes cannot all pass the check together.
    const running = this.perAccountRunning.get(accountId) ?? 0;
    if (running >= this.perAccount) {
      throw new AppError('RATE_LIMITED', `At most ${this.perAccount} subscriptions run at once for one account; complete one first.`, {
        limit: this.perAccount,
      });
    }
    this.perAccountRunning.set(accountId, running + 1);
    // Among the watcher's subscribers before its first read ends, so that nobody leaving meanwhile stops it.
    const watcher = this.watcherOf(id);
    const subscriber = new Wakeup();
    watcher.subscribers.add(subscriber);
    this.subscribers++;
    let ended = false;
    const leave = () => {
      if (ended) return;
      ended = true;
      const left = (this.perAccountRunning.get(accountId) ?? 1) - 1;
      if (left > 0) this.perAccountRunning.set(accountId, left);
      else this.perAccountRunning.delete(accountId);
      watcher.subscribers.delete(subscriber);
      this.subscribers--;
      // Nobody follows the job any more: its watcher stops reading.
      if (!watcher.subscribers.size) this.forget(watcher);
      this.observe();
      subscriber.poke();
    };
    this.observe();
    try {
      await watcher.ready;
      // The same answer as for an id that does not exist: other accounts' ids reveal nothing.
      if (watcher.job.accountId !== accountId) throw notFound();
    } catch (err) {
      leave();
      throw err;
    }
    let sent: Job | null = null;
    const done = (): IteratorResult<Job> => {
      leave();
      return { done: true, value: undefined };
    };
    const next = async (): Promise<IteratorResult<Job>> => {
      while (!ended) {
        const job = watcher.job;
        if (!sent || job.status !== sent.status || job.progress !== sent.progress) {
          sent = job;
          return { done: false, value: job };
        }
        if (TERMINAL.has(sent.status)) break;
        if (watcher.failed) {
          done();
          throw watcher.failed;
        }
        await subscriber.wait(Number.POSITIVE_INFINITY);
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

  /** The job's watcher in this process, made (with one read) for its first subscriber. */
  private watcherOf(id: string): JobWatcher {
    const current = this.watchers.get(id);
    if (current) return current;
    const watcher = new JobWatcher(id);
    this.watchers.set(id, watcher);
    // Listening before the first read: a change between the two is not lost.
    watcher.unsubscribe.push(
      this.notifications.on('mediagate_job', (n) => n.id === id && watcher.wake.poke()),
      this.notifications.onReconnect(watcher.wake.poke),
    );
    watcher.ready = this.read(id).then(
      (job) => {
        if (!job) throw notFound();
        watcher.job = job;
        void this.run(watcher);
      },
      (err: unknown) => {
        this.forget(watcher);
        throw err;
      },
    );
    // Its subscribers hear the failure; nobody else must.
    watcher.ready.catch(() => undefined);
    return watcher;
  }

  /** Re-reads the job on each wake-up until it ends or nobody follows it, and tells every subscriber. */
  private async run(watcher: JobWatcher): Promise<void> {
    while (!watcher.stopped && !TERMINAL.has(watcher.job.status)) {
      // Parses are not notified (see Migration20261124000000_notify): they end within seconds, so re-read often.
      await watcher.wake.wait(
        watcher.job.operation === 'PARSE' ? Math.min(PARSE_RECHECK_MS, this.notifications.recheckMs) : this.notifications.recheckMs,
      );
      if (watcher.stopped) break;
      let latest: Job | null;
      try {
        latest = await this.read(watcher.id);
      } catch {
        // The database being away for a moment ends nothing: the next wake-up reads again.
        continue;
      }
      if (!latest) {
        watcher.failed = notFound();
        break;
      }
      const changed = latest.status !== watcher.job.status || latest.progress !== watcher.job.progress;
      watcher.job = latest;
      if (changed) watcher.tell();
    }
    // Its subscribers keep the final state (or the failure) to hand on; new ones read afresh.
    this.forget(watcher);
  }

  /** The job's row, whoever owns it (watch checks the owner); null when it is gone. */
  private read(id: string): Promise<Job | null> {
    this.observer.read();
    return this.jobs.getMany([id], null).then((rows) => rows[0] ?? null);
  }

  private forget(watcher: JobWatcher): void {
    watcher.stop();
    // Only this watcher's entry: a new one may have been made for the same job since.
    if (this.watchers.get(watcher.id) === watcher) this.watchers.delete(watcher.id);
    this.observe();
  }

  private observe(): void {
    this.observer.watching({ jobs: this.watchers.size, subscribers: this.subscribers });
  }
}

/** One job watched in this process: its latest row, and who follows it. */
class JobWatcher {
  job!: Job;
  /** Settles when the first read has (NOT_FOUND when the job does not exist). */
  ready!: Promise<void>;
  /** Set when the job disappeared: its subscribers end with it. */
  failed: AppError | null = null;
  stopped = false;
  readonly wake = new Wakeup();
  readonly subscribers = new Set<Wakeup>();
  readonly unsubscribe: (() => void)[] = [];

  constructor(readonly id: string) {}

  tell(): void {
    for (const subscriber of this.subscribers) subscriber.poke();
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribe.forEach((off) => off());
    this.wake.poke();
    // Whoever still waits sees the last state (the final one, when the job ended).
    this.tell();
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
        const timer = Number.isFinite(ms) ? setTimeout(wake, ms) : null;
        function wake() {
          if (timer) clearTimeout(timer);
          resolve();
        }
        this.wakeWaiter = wake;
      });
      this.wakeWaiter = null;
    }
    this.poked = false;
  }
}
