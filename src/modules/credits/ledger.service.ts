import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../errors.js';
import type { JobOperation } from '../jobs/job.entity.js';

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

/**
 * Credits move here and only here, and the job row moves with them: each operation is ONE SQL
 * statement (data-modifying CTEs), so a crash can never leave a hold without its job or a job
 * resolved without its ledger entry. Balances change by conditional UPDATEs, never by
 * read-modify-write in JavaScript, and every change appends a credit_entry.
 */
export class LedgerService {
  constructor(private readonly em: () => EntityManager) {}

  private async one<T>(sql: string, params: unknown[]): Promise<T> {
    const rows = await this.em().getConnection().execute<T[]>(sql, params);
    return rows[0];
  }

  /** Adds credits (GRANT) and returns the new available balance. */
  async grant(accountId: string, amount: number, reason: string | null): Promise<number> {
    if (!Number.isSafeInteger(amount) || amount <= 0) throw new AppError('INVALID_INPUT', 'amount must be a positive whole number', { amount: 'must be a positive integer' });
    const row = await this.one<{ available: string | null }>(
      `with b as (
         insert into credit_balance (account_id, available, held) values (?, ?, 0)
         on conflict (account_id) do update set available = credit_balance.available + excluded.available, updated_at = now()
         returning available
       ), e as (
         insert into credit_entry (account_id, kind, amount, available_delta, held_delta, reason)
         select ?, 'GRANT', ?, ?, 0, ? from b
       )
       select available from b`,
      [accountId, amount, accountId, amount, amount, reason],
    );
    return Number(row.available);
  }

  /**
   * Creates the RUNNING job and places its hold in one statement. Without enough available credits
   * nothing is written and 402 INSUFFICIENT_CREDITS is thrown.
   */
  async openJob(j: OpenJobInput): Promise<{ balance: number }> {
    const row = await this.one<{ after: string | null; before: string | null }>(
      `with b as (
         update credit_balance set available = available - ?, held = held + ?, updated_at = now()
         where account_id = ? and available >= ?
         returning available
       ), j as (
         insert into job (id, account_id, api_key_id, operation, status, input, hold_amount, deadline_at, started_at, idempotency_key, request_hash, request_id)
         select ?, ?, ?, ?, ?, ?::jsonb, ?, ?::timestamptz, case when ? = 'RUNNING' then now() end, ?, ?, ? from b
         returning id
       ), e as (
         insert into credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
         select ?, 'HOLD', ?, ?, ?, id from j
       )
       select (select available from b) as after,
              (select available from credit_balance where account_id = ?) as before`,
      [
        j.amount, j.amount, j.accountId, j.amount,
        j.jobId, j.accountId, j.apiKeyId, j.operation, j.status ?? 'RUNNING', JSON.stringify(j.input), j.amount, j.deadlineAt.toISOString(),
        j.status ?? 'RUNNING', j.idempotencyKey ?? null, j.requestHash ?? null, j.requestId ?? null,
        j.accountId, j.amount, -j.amount, j.amount,
        j.accountId,
      ],
    );
    // The statement's snapshot may predate the holds that took the credits (it waited on their row
    // lock), so the refusal reads the balance again rather than report one that would have covered it.
    if (row.after === null) throw insufficient(j.amount, (await this.balance(j.accountId)).available);
    return { balance: Number(row.after) };
  }

  /** Grows an open job's hold (a transcription learns its price once the media's length is known). */
  async extendHold(jobId: string, extra: number): Promise<void> {
    if (extra <= 0) return;
    const row = await this.one<{ after: string | null; before: string | null; held: string | null; open: boolean }>(
      `with j as (
         select account_id, hold_amount from job where id = ? and status in ('QUEUED', 'RUNNING') for update
       ), b as (
         update credit_balance c set available = c.available - ?, held = c.held + ?, updated_at = now()
         from j where c.account_id = j.account_id and c.available >= ?
         returning c.available
       ), u as (
         update job set hold_amount = hold_amount + ? where id = ? and exists (select 1 from b)
       ), e as (
         insert into credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
         select account_id, 'HOLD', ?, ?, ?, ? from j where exists (select 1 from b)
       )
       select (select available from b) as after,
              (select c.available from credit_balance c join j on c.account_id = j.account_id) as before,
              (select hold_amount from j) as held,
              exists (select 1 from j) as open`,
      [jobId, extra, extra, extra, extra, jobId, extra, -extra, extra, jobId],
    );
    if (!row.open) throw new AppError('PROVIDER_TIMEOUT', 'The task passed its deadline.');
    // The caller sees the whole price against what it had before the task began.
    const held = num(row.held) ?? 0;
    if (row.after === null) throw insufficient(held + extra, (await this.availableOfJob(jobId)) + held);
  }

  /** SUCCEEDED: captures the whole hold. Null when the job was already resolved (e.g. timed out by the sweeper). */
  async succeed(jobId: string, result: Record<string, unknown>, provider: string): Promise<Settlement | null> {
    // Lock order is job, then balance, everywhere: no two ledger statements can deadlock.
    const row = await this.one<{ charged: string | null; balance: string | null }>(
      `with j0 as (
         select id, account_id, hold_amount from job where id = ? and status in ('QUEUED', 'RUNNING') for update
       ), b as (
         update credit_balance c set held = c.held - j0.hold_amount, updated_at = now()
         from j0 where c.account_id = j0.account_id
         returning c.available
       ), j as (
         update job set status = 'SUCCEEDED', result = ?::jsonb, provider = ?, credits_charged = hold_amount, progress = 1,
                        finished_at = now(), balance_after = (select available from b)
         where id = (select id from j0)
         returning account_id, hold_amount
       ), e as (
         insert into credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
         select account_id, 'CAPTURE', hold_amount, 0, -hold_amount, ? from j
       )
       select (select hold_amount from j) as charged, (select available from b) as balance`,
      [jobId, JSON.stringify(result), provider, jobId],
    );
    return row.charged === null ? null : { charged: Number(row.charged), balance: Number(row.balance) };
  }

  /** FAILED or CANCELED: releases the whole hold; nothing is consumed. False when already resolved. */
  async fail(jobId: string, status: 'FAILED' | 'CANCELED', code: string, message: string, provider: string | null = null): Promise<boolean> {
    const row = await this.one<{ released: string | null }>(
      `with j as (
         update job set status = ?, error_code = ?, error_message = ?, provider = ?, credits_charged = 0, finished_at = now()
         where id = ? and status in ('QUEUED', 'RUNNING')
         returning account_id, hold_amount
       ), b as (
         update credit_balance c set available = c.available + j.hold_amount, held = c.held - j.hold_amount, updated_at = now()
         from j where c.account_id = j.account_id
       ), e as (
         insert into credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
         select account_id, 'RELEASE', hold_amount, hold_amount, -hold_amount, ? from j
       )
       select (select hold_amount from j) as released`,
      [status, code, message.slice(0, 500), provider, jobId, jobId],
    );
    return row.released !== null;
  }

  /** QUEUED → RUNNING for the worker that picked the job; null when it was canceled or swept meanwhile. */
  async markRunning(jobId: string): Promise<{ input: Record<string, unknown>; holdAmount: number; deadlineAt: Date; requestId: string | null } | null> {
    const row = await this.one<{ input: Record<string, unknown>; hold_amount: string; deadline_at: string | Date; request_id: string | null } | undefined>(
      `update job set status = 'RUNNING', started_at = now() where id = ? and status = 'QUEUED'
       returning input, hold_amount, deadline_at, request_id`,
      [jobId],
    );
    return row ? { input: row.input, holdAmount: Number(row.hold_amount), deadlineAt: new Date(row.deadline_at), requestId: row.request_id } : null;
  }

  /**
   * RUNNING → QUEUED for a worker that stops before it could finish: the hold stays as it is (no
   * ledger entry), so the next worker carries the job on. False when it was no longer RUNNING.
   */
  async requeue(jobId: string): Promise<boolean> {
    const rows = await this.em()
      .getConnection()
      .execute<{ id: string }[]>(`update job set status = 'QUEUED', progress = 0, started_at = null where id = ? and status = 'RUNNING' returning id`, [jobId]);
    return rows.length > 0;
  }

  /** A job's status now (null when there is no such job). */
  async status(jobId: string): Promise<string | null> {
    const row = await this.one<{ status: string } | undefined>(`select status from job where id = ?`, [jobId]);
    return row?.status ?? null;
  }

  /** Progress of a running job, 0..1; ignored once the job is no longer running. */
  async setProgress(jobId: string, progress: number): Promise<void> {
    await this.em()
      .getConnection()
      .execute(`update job set progress = ? where id = ? and status = 'RUNNING' and progress < ?`, [progress, jobId, progress]);
  }

  /** Fails every open job past its deadline and releases its hold (a crashed worker's jobs too); returns the jobs it failed. */
  async sweepExpired(): Promise<{ jobId: string; webhookUrl: string | null }[]> {
    const row = await this.one<{ swept: { id: string; url: string | null }[] | string | null }>(
      `with j as (
         update job set status = 'FAILED', error_code = 'PROVIDER_TIMEOUT', error_message = 'The task passed its deadline.', credits_charged = 0, finished_at = now()
         where status in ('QUEUED', 'RUNNING') and deadline_at < now()
         returning id, account_id, hold_amount, input->>'webhookUrl' as url
       ), agg as (
         select account_id, sum(hold_amount) as total from j group by account_id
       ), b as (
         update credit_balance c set available = c.available + agg.total, held = c.held - agg.total, updated_at = now()
         from agg where c.account_id = agg.account_id
       ), e as (
         insert into credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
         select account_id, 'RELEASE', hold_amount, hold_amount, -hold_amount, id from j
       )
       select coalesce(json_agg(json_build_object('id', id, 'url', url)), '[]') as swept from j`,
      [],
    );
    const swept = typeof row.swept === 'string' ? (JSON.parse(row.swept) as { id: string; url: string | null }[]) : (row.swept ?? []);
    return swept.map((s) => ({ jobId: s.id, webhookUrl: s.url }));
  }

  /**
   * The live or successful job holding an idempotency key (within 24 hours), if any. Keys older
   * than that are released first, so they can name a new task.
   */
  async findByIdempotencyKey(accountId: string, key: string): Promise<IdempotentJob | null> {
    await this.em()
      .getConnection()
      .execute(
        `update job set idempotency_key = null
          where account_id = ? and idempotency_key = ? and created_at < now() - interval '24 hours'`,
        [accountId, key],
      );
    const rows = await this.em()
      .getConnection()
      .execute<IdempotentRow[]>(
        `select id, status, request_hash, result, provider, credits_charged, balance_after from job
          where account_id = ? and idempotency_key = ? and status not in ('FAILED', 'CANCELED')`,
        [accountId, key],
      );
    const r = rows[0];
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

  /** Available credits of a job's account now (a refusal's details, read after the refusing statement). */
  private async availableOfJob(jobId: string): Promise<number> {
    const row = await this.one<{ available: string } | undefined>(
      `select c.available from credit_balance c join job j on j.account_id = c.account_id where j.id = ?`,
      [jobId],
    );
    return Number(row?.available ?? 0);
  }

  /** Available and held credits of an account (zeros when it has no balance row yet). */
  async balance(accountId: string): Promise<{ available: number; held: number }> {
    const row = await this.one<{ available: string; held: string } | undefined>(
      `select available, held from credit_balance where account_id = ?`,
      [accountId],
    );
    return { available: Number(row?.available ?? 0), held: Number(row?.held ?? 0) };
  }
}

function insufficient(required: number, available: number): AppError {
  return new AppError('INSUFFICIENT_CREDITS', `This operation needs ${required} credit(s); ${available} available.`, { required, available });
}
