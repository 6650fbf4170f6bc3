import { ledgerStatement as statement } from '../credits/ledger.sql.js';

// A running task learns it costs more (a transcription, once its media is measured): its hold grows, in one statement.

/** Grows an open job's hold; nothing changes when the account cannot cover it or the job's key was revoked. */
export const EXTEND_HOLD = statement(
  'extend_hold',
  `with j as (
     select account_id, hold_amount, api_key_id from job where id = $1::uuid and status in ('QUEUED', 'RUNNING') for update
   ), k as (
     select 1 from api_key k join j on k.id = j.api_key_id where k.revoked_at is not null
   ), b as (
     update credit_balance c set available = c.available - $2::bigint, held = c.held + $2::bigint, updated_at = now()
     from j where c.account_id = j.account_id and c.available >= $2::bigint and not exists (select 1 from k)
     returning c.available
   ), u as (
     update job set hold_amount = hold_amount + $2::bigint where id = $1::uuid and exists (select 1 from b)
   ), e as (
     insert into credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
     select account_id, 'HOLD', $2::bigint, -$2::bigint, $2::bigint, $1::uuid from j where exists (select 1 from b)
   )
   select (select available from b) as after,
          (select hold_amount from j) as held,
          exists (select 1 from j) as open,
          exists (select 1 from k) as revoked,
          (select api_key_id from j) as api_key_id`,
);
