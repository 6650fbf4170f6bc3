import { databaseUnavailable } from '../../db/outage.js';
import { AppError, isAppError } from '../../errors.js';

/** How a task's work ended when it did not succeed, and how the waiting caller hears it. */

/** Answers at the deadline even when a provider ignores the abort signal. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** What a canceled task's waiting caller hears: the contract has no code of its own for it. */
export const canceledByCaller = () => new AppError('PROVIDER_TIMEOUT', 'Canceled by the caller.');

/** What a waiting caller hears when the instance stops before its task could finish: try again (elsewhere). */
export const stopping = () => new AppError('PROVIDER_UNAVAILABLE', 'This instance is stopping; send the request again.');

/** The abort reason of a queued job's work when its worker stops: the job goes back to the queue. */
export class HandedBack extends Error {
  constructor() {
    super('The worker stopped; the job goes back to the queue.');
    this.name = 'HandedBack';
  }
}

/** The contract's error for whatever a task's work threw. */
export function toAppError(err: unknown, signal: AbortSignal): AppError {
  if (isAppError(err)) return err;
  if (signal.aborted) return new AppError('PROVIDER_TIMEOUT');
  return databaseUnavailable(err) ?? new AppError('INTERNAL_ERROR', undefined, undefined, { cause: err });
}

/** Whether an insert lost a race on a unique index (a twin request with the same idempotency key). */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; name?: string; cause?: { code?: string } };
  return e?.name === 'UniqueConstraintViolationException' || e?.code === '23505' || e?.cause?.code === '23505';
}
