import { AppError } from '../../errors.js';
import { failpoint } from '../../failpoints.js';
import type { TaskLedger } from './task-ledger.js';

export interface TaskOutcome<R> {
  jobId: string;
  provider: string;
  result: R;
  charged: number;
  balance: number;
  /** True when this is the stored answer of an earlier request with the same idempotency key. */
  replayed: boolean;
}

/** An idempotency key and the fingerprint of the request it was sent with. */
export interface Idempotency {
  key: string;
  requestHash: string;
}

/**
 * Idempotent replay: what a request carrying an idempotency key gets when the key was seen before.
 * The stored answer of the first request; 409 IDEMPOTENCY_KEY_IN_USE while its task runs; 422
 * IDEMPOTENCY_KEY_REUSED when the key came with another request. Null: the key is new.
 */
export async function replayOf<R>(ledger: TaskLedger, accountId: string, idempotency: Idempotency): Promise<TaskOutcome<R> | null> {
  const found = await ledger.findByIdempotencyKey(accountId, idempotency.key);
  failpoint('task.afterReplayLookup');
  if (!found) return null;
  if (found.requestHash !== idempotency.requestHash) throw new AppError('IDEMPOTENCY_KEY_REUSED');
  if (found.status !== 'SUCCEEDED' || !found.result) throw new AppError('IDEMPOTENCY_KEY_IN_USE');
  return {
    jobId: found.jobId,
    provider: found.provider ?? '',
    result: found.result as R,
    charged: found.charged,
    balance: found.balance ?? 0,
    replayed: true,
  };
}

/** A queued job's key seen before: that job, whatever its state (422 when the key came with another request). Null: the key is new. */
export async function queuedTwinOf(
  ledger: TaskLedger,
  accountId: string,
  idempotency: Idempotency | null | undefined,
): Promise<{ jobId: string; replayed: true } | null> {
  if (!idempotency) return null;
  const found = await ledger.findByIdempotencyKey(accountId, idempotency.key);
  if (found && found.requestHash !== idempotency.requestHash) throw new AppError('IDEMPOTENCY_KEY_REUSED');
  return found ? { jobId: found.jobId, replayed: true } : null;
}
