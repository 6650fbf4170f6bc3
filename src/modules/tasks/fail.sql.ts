import { ledgerStatement as statement } from '../credits/ledger.sql.js';

// A task fails or is canceled: its job row and the release of its hold, in one statement.

/** FAILED or CANCELED: releases the whole hold. */
export const FAIL = statement(
  'fail',
  `with j as (
     update job set status = $1::text, error_code = $2::text, error_message = $3::text, provider = $4::text, credits_charged = 0, finished_at = now()
     where id = $5::uuid and status in ('QUEUED', 'RUNNING')
     returning account_id, hold_amount
   ), b as (
     update credit_balance c set available = c.available + j.hold_amount, held = c.held - j.hold_amount, updated_at = now()
     from j where c.account_id = j.account_id
   ), e as (
     insert into credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
     select account_id, 'RELEASE', hold_amount, hold_amount, -hold_amount, $5::uuid from j
   )
   select (select hold_amount from j) as released`,
);
