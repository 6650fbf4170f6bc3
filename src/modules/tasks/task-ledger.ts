import type { HotPool, Statement } from '../../db/hot-pool.js';
import { databaseUnavailable } from '../../db/outage.js';
import { AppError } from '../../errors.js';
import type { JobOperation } from '../jobs/job.entity.js';
import { Batcher, type MemberOutcome } from '../credits/batcher.js';
import type { LedgerService } from '../credits/ledger.service.js';
import { EXTEND_HOLD } from './extend-hold.sql.js';
import { FAIL } from './fail.sql.js';
import { EXPIRE_IDEMPOTENCY_KEY, FIND_BY_IDEMPOTENCY_KEY } from './idempotency-key.sql.js';
import { MARK_RUNNING } from './mark-running.sql.js';
import { OPEN_JOB, OPEN_JOBS } from './open.sql.js';
import { SET_PROGRESS, STATUS } from './progress.sql.js';
import { REQUEUE } from './requeue.sql.js';
import { SETTLEMENT, SUCCEED, SUCCEED_MANY } from './succeed.sql.js';
import { SWEEP_EXPIRED } from './sweep-expired.sql.js';

/** The ledger's answer after a hold is resolved. */
export interface Settlement {
  charged: number;
  balance: number;
}

export interface OpenJobInput {
  jobId: string;
  accountId: string;
  apiKeyId: string | null;
  operation: JobOperation;
  input: Record<string, unknown>;
  amount: number;
  deadlineAt: Date;
  idempotencyKey?: string | null;
  requestHash?: string | null;
  /** QUEUED for work a queue worker picks up later; RUNNING (default) for work that starts now. */
  status?: 'QUEUED' | 'RUNNING';
  /** The request that opened the job, so its failure can be found in the logs. */
  requestId?: string | null;
}

/** A job found by its idempotency key. */
export interface IdempotentJob {
  jobId: string;
  status: string;
  requestHash: string | null;
  result: Record<string, unknown> | null;
  provider: string | null;
  charged: number;
  balance: number | null;
}

interface IdempotentRow {
  id: string;
  status: string;
  request_hash: string | null;
  result: Record<string, unknown> | null;
  provider: string | null;
  credits_charged: string;
  balance_after: string | null;
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** How the holds and captures of concurrent requests are grouped. */
export interface LedgerOptions {
  /** While a batch is written, holds (and captures) arriving within this many milliseconds share the next statement; 0: one statement each. */
  batchWindowMs: number;
  /** Members of one batch at most. */
  batchMaxSize?: number;
  /** Batches of each kind in flight at most; the next one grows meanwhile. */
  batchMaxInFlight?: number;
  /** Told when a hold was refused because the request's key is revoked (the key cache forgets it). */
  onKeyRevoked?: (apiKeyId: string) => void;
}

interface Capture {
  jobId: string;
  result: Record<string, unknown>;
  provider: string;
}

/**
 * A task's job row and its credits move together: each transition that moves credits (open with its
 * hold, extend the hold, succeed with its capture, fail or cancel with its release, the sweep) is ONE
 * SQL statement (data-modifying CTEs, one file per transition beside this one), so a crash can never
 * leave a hold without its job or a job resolved without its ledger entry. Balances change by
 * conditional UPDATEs, never by read-modify-write in JavaScript, and every change appends a
 * credit_entry. The statements run prepared, on the hot path's own pool; with a batch window, the
 * holds and captures of concurrent requests are applied a batch per statement, each request still
 * getting its own answer. The transitions that move no credit (QUEUED → RUNNING, back to QUEUED,
 * progress) are here too: this is the job's state machine; `credits/` owns balances and entries.
 */
export class TaskLedger {
  private readonly onKeyRevoked: (apiKeyId: string) => void;
  private readonly holds: Batcher<OpenJobInput, { balance: number }> | null = null;
  private readonly captures: Batcher<Capture, Settlement | null> | null = null;

  constructor(
    private readonly db: HotPool,
    private readonly credits: LedgerService,
    options: LedgerOptions = { batchWindowMs: 0 },
  ) {
    this.onKeyRevoked = options.onKeyRevoked ?? (() => {});
    if (options.batchWindowMs > 0) {
      // Two in flight: a batch can be sent while the previous one commits (1, 2 and 4 measured alike
      // on one hot account with `npm run bench`; 2 waits less when load is light).
      const batching = { windowMs: options.batchWindowMs, maxSize: options.batchMaxSize ?? 64, maxInFlight: options.batchMaxInFlight ?? 2 };
      this.holds = new Batcher((items) => this.openMany(items), batching);
      this.captures = new Batcher((items) => this.succeedMany(items), batching);
    }
  }

  private async one<T>(statement: Statement, values: unknown[]): Promise<T> {
    return (await this.db.query<T>(statement, values))[0];
  }

  /**
   * Creates the job and places its hold in one statement. Without enough available credits nothing
   * is written and 402 INSUFFICIENT_CREDITS is thrown; when the request's key has been revoked
   * (whatever a cache still says), nothing is written and 401 UNAUTHENTICATED is thrown.
   */
  async openJob(j: OpenJobInput): Promise<{ balance: number }> {
    return this.holds ? this.holds.submit(j) : this.openOne(j);
  }

  private async openOne(j: OpenJobInput): Promise<{ balance: number }> {
    const row = await this.one<{ after: string | null; revoked: boolean }>(OPEN_JOB, [
      j.jobId,
      j.accountId,
      j.apiKeyId,
      j.operation,
      j.status ?? 'RUNNING',
      JSON.stringify(j.input),
      j.amount,
      j.deadlineAt.toISOString(),
      j.idempotencyKey ?? null,
      j.requestHash ?? null,
      j.requestId ?? null,
    ]);
    if (row.revoked) throw this.revoked(j.apiKeyId);
    // The statement's snapshot may predate the holds that took the credits (it waited on their row
    // lock), so the refusal reads the balance again rather than report one that would have covered it.
    if (row.after === null) throw insufficient(j.amount, (await this.credits.balance(j.accountId)).available);
    return { balance: Number(row.after) };
  }

  private async openMany(items: OpenJobInput[]): Promise<MemberOutcome<{ balance: number }>[]> {
    if (items.length === 1) return [await outcomeOf(this.openOne(items[0]))];
    let rows: { revoked: boolean; held: boolean; after: string | null; available: string }[];
    try {
      rows = await this.db.query(OPEN_JOBS, [
        items.map((j) => j.jobId),
        items.map((j) => j.accountId),
        items.map((j) => j.apiKeyId),
        items.map((j) => j.operation),
        items.map((j) => j.status ?? 'RUNNING'),
        JSON.stringify(items.map((j) => j.input)),
        items.map((j) => j.amount),
        items.map((j) => j.deadlineAt.toISOString()),
        items.map((j) => j.idempotencyKey ?? null),
        items.map((j) => j.requestHash ?? null),
        items.map((j) => j.requestId ?? null),
      ]);
    } catch (err) {
      return this.oneByOne(err, items, (j) => this.openOne(j));
    }
    return Promise.all(
      rows.map((row, i): MemberOutcome<{ balance: number }> | Promise<MemberOutcome<{ balance: number }>> => {
        const j = items[i];
        if (row.revoked) return { error: this.revoked(j.apiKeyId) };
        if (row.held) return { value: { balance: Number(row.after) } };
        const available = Number(row.available);
        // Members are taken in arrival order: a larger one before it may have stopped this one
        // although it fits what is left, so it gets its own statement rather than a wrong 402.
        if (j.amount <= available) return outcomeOf(this.openOne(j));
        return { error: insufficient(j.amount, available) };
      }),
    );
  }

  /**
   * A batch the database refused as a whole wrote nothing: each member runs alone, so that one
   * member's fault (an idempotency key a twin took first, a row deleted meanwhile) is its own. A
   * lost connection is everyone's: whether the batch was written is unknown, and the sweeper
   * releases what it held.
   */
  private async oneByOne<I, O>(err: unknown, items: I[], alone: (item: I) => Promise<O>): Promise<MemberOutcome<O>[]> {
    if (databaseUnavailable(err)) return items.map(() => ({ error: err }));
    return Promise.all(items.map((item) => outcomeOf(alone(item))));
  }

  /** Grows an open job's hold (a transcription learns its price once the media's length is known). */
  async extendHold(jobId: string, extra: number): Promise<void> {
    if (extra <= 0) return;
    const row = await this.one<{ after: string | null; held: string | null; open: boolean; revoked: boolean; api_key_id: string | null }>(
      EXTEND_HOLD,
      [jobId, extra],
    );
    if (!row.open) throw new AppError('PROVIDER_TIMEOUT', 'The task passed its deadline.');
    if (row.revoked) throw this.revoked(row.api_key_id);
    // The caller sees the whole price against what it had before the task began.
    const held = num(row.held) ?? 0;
    if (row.after === null) throw insufficient(held + extra, (await this.credits.availableOfJob(jobId)) + held);
  }

  /** SUCCEEDED: captures the whole hold. Null when the job was already resolved (e.g. timed out by the sweeper). */
  async succeed(jobId: string, result: Record<string, unknown>, provider: string): Promise<Settlement | null> {
    return this.captures ? this.captures.submit({ jobId, result, provider }) : this.succeedOne({ jobId, result, provider });
  }

  private async succeedOne(c: Capture): Promise<Settlement | null> {
    const row = await this.one<{ charged: string | null; balance: string | null }>(SUCCEED, [
      c.jobId,
      JSON.stringify(c.result),
      c.provider,
    ]);
    return settlement(row);
  }

  private async succeedMany(items: Capture[]): Promise<MemberOutcome<Settlement | null>[]> {
    if (items.length === 1) return [await outcomeOf(this.succeedOne(items[0]))];
    let rows: { charged: string | null; balance: string | null }[];
    try {
      rows = await this.db.query(SUCCEED_MANY, [
        items.map((c) => c.jobId),
        JSON.stringify(items.map((c) => c.result)),
        items.map((c) => c.provider),
      ]);
    } catch (err) {
      return this.oneByOne(err, items, (c) => this.succeedOne(c));
    }
    return rows.map((row) => ({ value: settlement(row) }));
  }

  /** What a SUCCEEDED job charged and left available; null in any other state (for a capture whose answer was lost). */
  async settlement(jobId: string): Promise<Settlement | null> {
    const row = await this.one<{ credits_charged: string; balance_after: string | null } | undefined>(SETTLEMENT, [jobId]);
    return row ? { charged: Number(row.credits_charged), balance: Number(row.balance_after ?? 0) } : null;
  }

  /** FAILED or CANCELED: releases the whole hold; nothing is consumed. False when already resolved. */
  async fail(
    jobId: string,
    status: 'FAILED' | 'CANCELED',
    code: string,
    message: string,
    provider: string | null = null,
  ): Promise<boolean> {
    const row = await this.one<{ released: string | null }>(FAIL, [status, code, message.slice(0, 500), provider, jobId]);
    return row.released !== null;
  }

  /** QUEUED → RUNNING for the worker that picked the job; null when it was canceled or swept meanwhile. */
  async markRunning(
    jobId: string,
  ): Promise<{ input: Record<string, unknown>; holdAmount: number; deadlineAt: Date; requestId: string | null } | null> {
    const row = await this.one<
      { input: Record<string, unknown>; hold_amount: string; deadline_at: string | Date; request_id: string | null } | undefined
    >(MARK_RUNNING, [jobId]);
    return row
      ? { input: row.input, holdAmount: Number(row.hold_amount), deadlineAt: new Date(row.deadline_at), requestId: row.request_id }
      : null;
  }

  /**
   * RUNNING → QUEUED for a worker that stops before it could finish: the hold stays as it is (no
   * ledger entry), so the next worker carries the job on. False when it was no longer RUNNING.
   */
  async requeue(jobId: string): Promise<boolean> {
    return (await this.db.query(REQUEUE, [jobId])).length > 0;
  }

  /** A job's status now (null when there is no such job). */
  async status(jobId: string): Promise<string | null> {
    const row = await this.one<{ status: string } | undefined>(STATUS, [jobId]);
    return row?.status ?? null;
  }

  /** Progress of a running job, 0..1; ignored once the job is no longer running. */
  async setProgress(jobId: string, progress: number): Promise<void> {
    await this.db.query(SET_PROGRESS, [progress, jobId]);
  }

  /** Fails every open job past its deadline and releases its hold (a crashed worker's jobs too); returns the jobs it failed. */
  async sweepExpired(): Promise<{ jobId: string; webhookUrl: string | null }[]> {
    const row = await this.one<{ swept: { id: string; url: string | null }[] | string | null }>(SWEEP_EXPIRED, []);
    const swept = typeof row.swept === 'string' ? (JSON.parse(row.swept) as { id: string; url: string | null }[]) : (row.swept ?? []);
    return swept.map((s) => ({ jobId: s.id, webhookUrl: s.url }));
  }

  /**
   * The live or successful job holding an idempotency key (within 24 hours), if any. Keys older
   * than that are released first, so they can name a new task.
   */
  async findByIdempotencyKey(accountId: string, key: string): Promise<IdempotentJob | null> {
    await this.db.query(EXPIRE_IDEMPOTENCY_KEY, [accountId, key]);
    const r = await this.one<IdempotentRow | undefined>(FIND_BY_IDEMPOTENCY_KEY, [accountId, key]);
    if (!r) return null;
    return {
      jobId: r.id,
      status: r.status,
      requestHash: r.request_hash,
      result: r.result,
      provider: r.provider,
      charged: Number(r.credits_charged),
      balance: num(r.balance_after),
    };
  }

  /** The refusal of a hold whose key is revoked: the same 401 as any bad key; the key cache forgets the key. */
  private revoked(apiKeyId: string | null): AppError {
    if (apiKeyId) this.onKeyRevoked(apiKeyId);
    return new AppError('UNAUTHENTICATED');
  }
}

function insufficient(required: number, available: number): AppError {
  return new AppError('INSUFFICIENT_CREDITS', `This operation needs ${required} credit(s); ${available} available.`, {
    required,
    available,
  });
}

const settlement = (row: { charged: string | null; balance: string | null }): Settlement | null =>
  row.charged === null ? null : { charged: Number(row.charged), balance: Number(row.balance) };

function outcomeOf<O>(work: Promise<O>): Promise<MemberOutcome<O>> {
  return work.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}
