import { createHash } from 'node:crypto';
import { AppError } from '../../errors.js';
import type { JobOperation } from '../jobs/job.entity.js';
import type { Idempotency } from './task-replay.js';

const KEY = /^[\x21-\x7e]{1,255}$/;

/** Keys sort their object keys so that field order never makes two equal requests differ. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The idempotency of a request (Idempotency-Key header / idempotencyKey argument): the key and a
 * fingerprint of the operation and its validated input, or null when no key was sent.
 */
export function idempotencyFor(
  key: string | null | undefined,
  operation: JobOperation,
  input: Record<string, unknown>,
): Idempotency | null {
  if (key === null || key === undefined) return null;
  if (!KEY.test(key)) {
    throw new AppError('INVALID_INPUT', 'The idempotency key must be 1 to 255 visible ASCII characters.', {
      idempotencyKey: 'must be 1 to 255 visible ASCII characters',
    });
  }
  return { key, requestHash: createHash('sha256').update(canonical({ operation, input })).digest('hex') };
}
