import { randomUUID } from 'node:crypto';
import pRetry from 'p-retry';
import { databaseUnavailable } from '../../db/outage.js';
import { AppError } from '../../errors.js';
import type { OpenJobInput, Settlement, TaskLedger } from './task-ledger.js';
import type { Principal } from '../api-keys/api-key.service.js';
import { currentRequestId } from '../../request-scope.js';
import type { Notifications } from '../../db/notifications.js';
import { failpoint } from '../../failpoints.js';
import { watchForCancel } from './cancel-watch.js';
import { HandedBack, canceledByCaller, isUniqueViolation, stopping, toAppError, untilAborted } from './task-errors.js';
import { queuedTwinOf, replayOf, type Idempotency, type TaskOutcome } from './task-replay.js';

import type { JobOperation } from '../jobs/job.entity.js';
import type { QueuedRun } from '../jobs/job-queue.js';

export interface TaskContext {
  jobId: string;
  signal: AbortSignal;
  /** Raises the hold once the real price is known (402 if the account cannot cover it). */
  extendHold(extra: number): Promise<void>;
  /** Reports progress, 0..1, on the job row (best effort). */
  progress(value: number): Promise<void>;
}

/** What a task is: who asks, for which operation with which input, at what price and deadline, under which idempotency key. */
export interface TaskRequest {
  principal: Principal;
  operation: JobOperation;
  input: Record<string, unknown>;
  price: number;
  timeoutMs: number;
  idempotency?: Idempotency | null;
}

export interface TaskLog {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Told how each task ended (metrics). */
export type TaskObserver = (operation: JobOperation, outcome: string, charged: number) => void;

/**
 * Told when a job reached its final status (webhooks). `webhookUrl` is what the job's input names,
 * or undefined when this side does not know it (a cancel).
 */
export type JobEndListener = (jobId: string, status: 'SUCCEEDED' | 'FAILED' | 'CANCELED', webhookUrl?: string | null) => void;

/**
 * The life of one task: hold → work → capture, or hold → release on any failure. The job row and
 * the hold are written together, so if this process dies midway the sweeper finds the job past its
 * deadline and releases the hold: nothing is ever lost or charged for a failure.
 */
export class TaskRunner {
  /** Work running in this process, so a cancel can stop it. */
  private readonly running = new Map<string, AbortController>();
  /** The ids among them that a queue worker runs (they can go back to the queue). */
  private readonly queued = new Set<string>();
  /** Set once the process stops past its grace period: work that starts after it is interrupted at once. */
  private interrupted = false;
  private readonly ledger: TaskLedger;
  private readonly log: TaskLog;
  private readonly observe: TaskObserver;
  /** How a queued job's worker hears that it was canceled elsewhere. */
  private readonly notifications: Notifications;
  /** Who hears of jobs that ended (webhooks). */
  private readonly onEnded: JobEndListener;

  constructor(deps: {
    ledger: TaskLedger;
    log: TaskLog;
    notifications: Notifications;
    observe?: TaskObserver;
    onEnded?: JobEndListener;
  }) {
    this.ledger = deps.ledger;
    this.log = deps.log;
    this.notifications = deps.notifications;
    this.observe = deps.observe ?? (() => {});
    this.onEnded = deps.onEnded ?? (() => {});
  }

  /** Runs a task while its caller waits: hold, work, capture (or release on any failure). */
  async run<R extends object>(
    opts: TaskRequest & { execute: (ctx: TaskContext) => Promise<{ provider: string; result: R }> },
  ): Promise<TaskOutcome<R>> {
    const jobId = randomUUID();
    const { idempotency } = opts;
    if (idempotency) {
      const replay = await replayOf<R>(this.ledger, opts.principal.accountId, idempotency);
      if (replay) return replay;
    }
    try {
      await this.open(jobId, opts, { idempotencyKey: idempotency?.key, requestHash: idempotency?.requestHash });
    } catch (err) {
      // Lost a race with a twin request carrying the same key: answer as if it had come first.
      if (idempotency && isUniqueViolation(err)) {
        const replay = await replayOf<R>(this.ledger, opts.principal.accountId, idempotency);
        if (replay) return replay;
      }
      throw err;
    }
    failpoint('task.afterHold');
    return this.carryOut(jobId, opts.operation, opts.timeoutMs, opts.execute, webhookOf(opts.input), currentRequestId());
  }

  /**
   * Opens a QUEUED job with its hold and returns its id; a queue worker carries it out later with
   * `runQueued`. Nothing is charged until it succeeds. With an idempotency key, the job already
   * holding the key (queued, running or done) is returned instead (`replayed`); the key with
   * another request is 422.
   */
  async enqueue(opts: TaskRequest): Promise<{ jobId: string; replayed: boolean }> {
    const { idempotency } = opts;
    const existing = () => queuedTwinOf(this.ledger, opts.principal.accountId, idempotency);
    const before = await existing();
    if (before) return before;
    const jobId = randomUUID();
    try {
      await this.open(jobId, opts, { status: 'QUEUED', idempotencyKey: idempotency?.key, requestHash: idempotency?.requestHash });
    } catch (err) {
      // Lost a race with a twin request carrying the same key: the twin's job is the answer.
      const twin = isUniqueViolation(err) ? await existing() : null;
      if (twin) return twin;
      throw err;
    }
    failpoint('queue.afterHold');
    return { jobId, replayed: false };
  }

  /** The job row and its hold, in one statement (402 when the account cannot cover the price). */
  private open(
    jobId: string,
    opts: { principal: Principal; operation: JobOperation; input: Record<string, unknown>; price: number; timeoutMs: number },
    extra: Pick<OpenJobInput, 'idempotencyKey' | 'requestHash' | 'status'>,
  ): Promise<unknown> {
    return this.ledger.openJob({
      requestId: currentRequestId(),
      jobId,
      accountId: opts.principal.accountId,
      apiKeyId: opts.principal.apiKeyId,
      operation: opts.operation,
      input: opts.input,
      amount: opts.price,
      deadlineAt: new Date(Date.now() + opts.timeoutMs),
      ...extra,
    });
  }

  /**
   * The worker's side of a queued job: claim it, carry it out under its own deadline, settle it.
   * 'handed-back' when the process stopped first: the job is QUEUED again with its hold, for the queue
   * to send again.
   */
  async runQueued<R extends object>(
    jobId: string,
    operation: JobOperation,
    execute: (ctx: TaskContext, job: { input: Record<string, unknown>; holdAmount: number }) => Promise<{ provider: string; result: R }>,
  ): Promise<QueuedRun> {
    const job = await this.ledger.markRunning(jobId);
    // Canceled or swept before any worker got to it: nothing to do, its hold is already released.
    if (!job) return 'settled';
    failpoint('worker.afterMarkRunning');
    const stopWatching = watchForCancel(jobId, { ledger: this.ledger, notifications: this.notifications }, () =>
      this.running.get(jobId)?.abort(canceledByCaller()),
    );
    this.queued.add(jobId);
    try {
      await this.carryOut(
        jobId,
        operation,
        Math.max(1, job.deadlineAt.getTime() - Date.now()),
        (ctx) => execute(ctx, job),
        webhookOf(job.input),
        job.requestId,
      );
    } catch (err) {
      if (err instanceof HandedBack) return 'handed-back';
      // Otherwise already recorded on the job row (FAILED, with its code); a queued job has no caller waiting.
    } finally {
      this.queued.delete(jobId);
      stopWatching();
    }
    return 'settled';
  }

  /**
   * The process stops and its grace period is over: queued jobs running here go back to the queue
   * (QUEUED, hold intact: no credit moves, so the next worker captures it once), and the work of
   * callers still waiting fails with 503 and releases its holds. Returns how many were interrupted.
   */
  interruptAll(): number {
    this.interrupted = true;
    for (const [jobId, controller] of this.running) controller.abort(this.queued.has(jobId) ? new HandedBack() : stopping());
    return this.running.size;
  }

  /** Tells who listens that a job reached its final status elsewhere (the sweeper failed it). */
  ended(jobId: string, status: 'FAILED', webhookUrl: string | null): void {
    this.onEnded(jobId, status, webhookUrl);
  }

  /** Cancels a QUEUED or RUNNING job: releases its hold and stops its work if it runs here. False when it had finished. */
  async cancel(jobId: string): Promise<boolean> {
    const canceled = await this.ledger.fail(jobId, 'CANCELED', 'CANCELED', 'Canceled by the caller.');
    this.running.get(jobId)?.abort(canceledByCaller());
    if (canceled) this.onEnded(jobId, 'CANCELED');
    return canceled;
  }

  /** Runs the work of an open job under its deadline, then captures, or releases on any failure. */
  private async carryOut<R extends object>(
    jobId: string,
    operation: JobOperation,
    timeoutMs: number,
    execute: (ctx: TaskContext) => Promise<{ provider: string; result: R }>,
    webhookUrl: string | null,
    requestId: string | null,
  ): Promise<TaskOutcome<R>> {
    const deadlineAt = Date.now() + timeoutMs;
    const cancel = new AbortController();
    this.running.set(jobId, cancel);
    if (this.interrupted) cancel.abort(this.queued.has(jobId) ? new HandedBack() : stopping());
    // A timer cleared when the work ends: AbortSignal.timeout would stay armed for the whole timeout
    // after it, holding the task's signals (at a thousand parses a second, a minute of them).
    const deadline = setTimeout(() => cancel.abort(new DOMException('The task passed its deadline.', 'TimeoutError')), timeoutMs).unref();
    const signal = cancel.signal;
    let outcome: { provider: string; result: R };
    try {
      outcome = await untilAborted(
        execute({
          jobId,
          signal,
          extendHold: (n) => this.ledger.extendHold(jobId, n),
          progress: (p) => this.ledger.setProgress(jobId, p).catch(() => undefined),
        }),
        signal,
      );
    } catch (err) {
      // Given back rather than failed: only while it is still RUNNING (not canceled or swept meanwhile).
      if (cancel.signal.reason instanceof HandedBack && (await this.requeue(jobId))) throw cancel.signal.reason;
      const appError = toAppError(err, signal);
      // Why a task failed is on the job and in the log, with the request that opened it (a queued job has no caller to tell).
      if (appError.code === 'INTERNAL_ERROR') this.log.error({ err, jobId, requestId, operation }, 'task crashed');
      else this.log.warn({ jobId, requestId, operation, code: appError.code, reason: appError.message }, 'task failed');
      try {
        if (await this.ledger.fail(jobId, 'FAILED', appError.code, appError.message)) this.onEnded(jobId, 'FAILED', webhookUrl);
      } catch (releaseError) {
        // The hold stays until the sweeper releases it at the deadline; the caller still learns why.
        this.log.error({ err: releaseError, jobId }, 'could not release a failed task’s hold');
      }
      this.observe(operation, appError.code, 0);
      throw appError;
    } finally {
      clearTimeout(deadline);
      this.running.delete(jobId);
    }
    failpoint('task.afterWork');
    const settlement = await this.capture(jobId, outcome.result as Record<string, unknown>, outcome.provider, deadlineAt);
    failpoint('task.afterCapture');
    // Null: the job was canceled, or the sweeper failed it at its deadline; either way its hold is released.
    if (!settlement) {
      this.observe(operation, 'PROVIDER_TIMEOUT', 0);
      throw new AppError('PROVIDER_TIMEOUT');
    }
    this.observe(operation, 'SUCCEEDED', settlement.charged);
    this.onEnded(jobId, 'SUCCEEDED', webhookUrl);
    return { jobId, provider: outcome.provider, result: outcome.result, ...settlement, replayed: false };
  }

  /**
   * Captures the hold. When the database connection dies on the way, the capture may have committed
   * or not: it is tried again on fresh connections until the task's deadline (a no-op if it had),
   * and the job row then says whether this result was charged, so no caller is charged for an
   * answer it did not get. Only a database gone for longer than that leaves the caller a 503; an
   * idempotency key then replays whatever was charged.
   */
  private async capture(jobId: string, result: Record<string, unknown>, provider: string, deadlineAt: number): Promise<Settlement | null> {
    let lost = false;
    return pRetry(
      async () => {
        try {
          const settled = await this.ledger.succeed(jobId, result, provider);
          // After a lost answer, "already resolved" may be this very capture: the row says.
          return settled ?? (lost ? await this.ledger.settlement(jobId) : null);
        } catch (err) {
          // p-retry retries only what is `instanceof Error` in this realm; a socket error made by
          // node's own realm (as under jest's VM) is not, so it is wrapped, with the cause kept.
          throw err instanceof Error ? err : new Error(String((err as Error | null)?.message ?? err), { cause: err });
        }
      },
      {
        retries: Number.POSITIVE_INFINITY,
        minTimeout: 25,
        factor: 2,
        maxTimeout: 400,
        randomize: false,
        maxRetryTime: Math.max(0, deadlineAt - Date.now()),
        shouldRetry: ({ error }) => (lost = !!databaseUnavailable(error)),
      },
    );
  }

  private async requeue(jobId: string): Promise<boolean> {
    try {
      return await this.ledger.requeue(jobId);
    } catch (err) {
      this.log.error({ err, jobId }, 'could not give a stopped job back to the queue');
      return false;
    }
  }
}

/** The webhook URL a job's input names, if any. */
function webhookOf(input: Record<string, unknown>): string | null {
  return typeof input.webhookUrl === 'string' ? input.webhookUrl : null;
}
