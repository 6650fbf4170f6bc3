import { ledgerStatement as statement } from '../credits/ledger.sql.js';

// A running task reports how far it got, and where it stands; no credit moves.

export const SET_PROGRESS = statement(
  'set_progress',
  `update job set progress = $1::real where id = $2::uuid and status = 'RUNNING' and progress < $1::real`,
);

export const STATUS = statement('status', `select status from job where id = $1::uuid`);
