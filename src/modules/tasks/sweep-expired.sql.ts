import { ledgerStatement as statement } from '../credits/ledger.sql.js';

// Tasks past their deadline (a crashed worker's too) fail and their holds are released, all in one statement.

/** Every open job past its deadline: locked in id order, then their balances in account order. */
export const SWEEP_EXPIRED = statement(
  'sweep_expired',
  `with x as (
     select id from job where status in ('QUEUED', 'RUNNING') and deadline_at < now() order by id for update
   ), j as (
     update job set status = 'FAILED', error_code = 'PROVIDER_TIMEOUT', error_message = 'The task passed its deadline.', credits_charged = 0, finished_at = now()
     where id in (select id from x)
     returning id, account_id, hold_amount, input->>'webhookUrl' as url
   ), agg as (
     select account_id, sum(hold_amount) as total from j group by account_id
   ), locked as (
     select c.account_id from credit_balance c where c.account_id in (select account_id from agg) order by c.account_id for update
   ), b as (
     update credit_balance c set available = c.available + agg.total, held = c.held - agg.total, updated_at = now()
     from agg join locked l on l.account_id = agg.account_id where c.account_id = agg.account_id
   ), e as (
     insert into credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
     select account_id, 'RELEASE', hold_amount, hold_amount, -hold_amount, id from j
   )
   select coalesce(json_agg(json_build_object('id', id, 'url', url)), '[]') as swept from j`,
);
