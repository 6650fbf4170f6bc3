import type { HotPool, Statement } from '../../db/hot-pool.js';
import { AppError } from '../../errors.js';
import * as sql from './ledger.sql.js';

/**
 * Balances and their entries: credits are added here (grants), and read here. Every change of a
 * balance appends a credit_entry in the same statement; a task's hold, capture and release move with
 * its job row, in modules/tasks/ (TaskLedger), by the same rules.
 */
export class LedgerService {
  constructor(private readonly db: HotPool) {}

  private async one<T>(statement: Statement, values: unknown[]): Promise<T> {
    return (await this.db.query<T>(statement, values))[0];
  }

  /** Adds credits (GRANT) and returns the new available balance. */
  async grant(accountId: string, amount: number, reason: string | null): Promise<number> {
    if (!Number.isSafeInteger(amount) || amount <= 0)
      throw new AppError('INVALID_INPUT', 'amount must be a positive whole number', { amount: 'must be a positive integer' });
    const row = await this.one<{ available: string | null }>(sql.GRANT, [accountId, amount, reason]);
    return Number(row.available);
  }

  /** Available credits of a job's account now (a refusal's details, read after the refusing statement). */
  async availableOfJob(jobId: string): Promise<number> {
    const row = await this.one<{ available: string } | undefined>(sql.AVAILABLE_OF_JOB, [jobId]);
    return Number(row?.available ?? 0);
  }

  /** Available and held credits of an account (zeros when it has no balance row yet). */
  async balance(accountId: string): Promise<{ available: number; held: number }> {
    const row = await this.one<{ available: string; held: string } | undefined>(sql.BALANCE, [accountId]);
    return { available: Number(row?.available ?? 0), held: Number(row?.held ?? 0) };
  }
}
