import { ledgerStatement as statement } from '../credits/ledger.sql.js';

// A queued task is picked by a worker: QUEUED → RUNNING; no credit moves.

export const MARK_RUNNING = statement(
  'mark_running',
  `update job set status = 'RUNNING', started_at = now() where id = $1::uuid and status = 'QUEUED'
   returning input, hold_amount, deadline_at, request_id`,
);
