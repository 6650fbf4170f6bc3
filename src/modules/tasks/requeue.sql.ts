import { ledgerStatement as statement } from '../credits/ledger.sql.js';

// A worker stops before it could finish: RUNNING → QUEUED, the hold left as it is.

export const REQUEUE = statement(
  'requeue',
  `update job set status = 'QUEUED', progress = 0, started_at = null where id = $1::uuid and status = 'RUNNING' returning id`,
);
