import { ledgerStatement as statement } from '../credits/ledger.sql.js';

// A replayed request finds the task its idempotency key names (within 24 hours).

/** Frees an idempotency key older than 24 hours, so it can name a new task. */
export const EXPIRE_IDEMPOTENCY_KEY = statement(
  'expire_idempotency_key',
  `update job set idempotency_key = null
    where account_id = $1::uuid and idempotency_key = $2::text and created_at < now() - interval '24 hours'`,
);

export const FIND_BY_IDEMPOTENCY_KEY = statement(
  'find_by_idempotency_key',
  `select id, status, request_hash, result, provider, credits_charged, balance_after from job
    where account_id = $1::uuid and idempotency_key = $2::text and status not in ('FAILED', 'CANCELED')`,
);
