import { ledgerStatement as statement } from '../credits/ledger.sql.js';

// A task succeeds: its job row and the capture of its hold, in one statement (one per batch).

/** SUCCEEDED: captures the whole hold; no row from `j` when the job was already resolved. */
export const SUCCEED = statement(
  'succeed',
  `with j0 as (
     select id, account_id, hold_amount from job where id = $1::uuid and status in ('QUEUED', 'RUNNING') for update
   ), b as (
     update credit_balance c set held = c.held - j0.hold_amount, updated_at = now()
     from j0 where c.account_id = j0.account_id
     returning c.available
   ), j as (
     update job set status = 'SUCCEEDED', result = $2::jsonb, provider = $3::text, credits_charged = hold_amount, progress = 1,
                    finished_at = now(), balance_after = (select available from b)
     where id = (select id from j0)
     returning account_id, hold_amount
   ), e as (
     insert into credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
     select account_id, 'CAPTURE', hold_amount, 0, -hold_amount, $1::uuid from j
   )
   select (select hold_amount from j) as charged, (select available from b) as balance`,
);

/**
 * The captures of several jobs in one statement (the results in one JSON array): job rows locked
 * in id order, then balance rows in account order, each balance's held credits lowered by the sum
 * of its jobs' holds. A job named twice is captured once, for its first mention. One row per
 * member, in order.
 */
export const SUCCEED_MANY = statement(
  'succeed_many',
  `with m as (
     select * from rows from (unnest($1::uuid[]), jsonb_array_elements($2::jsonb), unnest($3::text[])) with ordinality as m(job_id, result, provider, ord)
   ), first as (
     select distinct on (job_id) * from m order by job_id, ord
   ), j0 as (
     select id, account_id, hold_amount from job
     where id in (select job_id from first) and status in ('QUEUED', 'RUNNING')
     order by id
     for update
   ), totals as (
     select account_id, sum(hold_amount) as total from j0 group by account_id
   ), locked as (
     select c.account_id from credit_balance c
     where c.account_id in (select account_id from totals)
     order by c.account_id
     for update
   ), b as (
     update credit_balance c set held = c.held - t.total, updated_at = now()
     from totals t join locked l on l.account_id = t.account_id
     where c.account_id = t.account_id
     returning c.account_id, c.available
   ), j as (
     update job set status = 'SUCCEEDED', result = f.result, provider = f.provider, credits_charged = job.hold_amount, progress = 1,
                    finished_at = now(), balance_after = b.available
     from j0 join first f on f.job_id = j0.id join b on b.account_id = j0.account_id
     where job.id = j0.id
     returning job.id, job.account_id, job.hold_amount
   ), e as (
     insert into credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
     select account_id, 'CAPTURE', hold_amount, 0, -hold_amount, id from j
   )
   select m.ord, j.hold_amount as charged, b.available as balance
   from m
   left join first f on f.ord = m.ord
   left join j on j.id = f.job_id
   left join b on b.account_id = j.account_id
   order by m.ord`,
);

/** What a succeeded job charged and left available (a capture whose answer was lost reads it here). */
export const SETTLEMENT = statement(
  'settlement',
  `select credits_charged, balance_after from job where id = $1::uuid and status = 'SUCCEEDED'`,
);
