import type { Statement } from '../../db/hot-pool.js';

/**
 * The ledger's statements, each ONE statement (data-modifying CTEs) and each prepared once per
 * connection under its name. Locks are taken in one order everywhere, so no two of them can
 * deadlock: job rows before balance rows, and several rows of one table in the order of their id.
 */

const statement = (name: string, text: string): Statement => ({ name: `ledger_${name}`, text });

export const GRANT = statement(
  'grant',
  `with b as (
     insert into credit_balance (account_id, available, held) values ($1::uuid, $2::bigint, 0)
     on conflict (account_id) do update set available = credit_balance.available + excluded.available, updated_at = now()
     returning available
   ), e as (
     insert into credit_entry (account_id, kind, amount, available_delta, held_delta, reason)
     select $1::uuid, 'GRANT', $2::bigint, $2::bigint, 0, $3::text from b
   )
   select available from b`,
);

/**
 * One hold and its job. Nothing is written when the account cannot cover it (`after` null) or when
 * the request's key was revoked meanwhile (`revoked`): a key cache that has not heard of the
 * revocation yet can never spend.
 */
export const OPEN_JOB = statement(
  'open_job',
  `with k as (
     select 1 from api_key where id = $3::uuid and revoked_at is not null
   ), b as (
     update credit_balance set available = available - $7::bigint, held = held + $7::bigint, updated_at = now()
     where account_id = $2::uuid and available >= $7::bigint and not exists (select 1 from k)
     returning available
   ), j as (
     insert into job (id, account_id, api_key_id, operation, status, input, hold_amount, deadline_at, started_at, idempotency_key, request_hash, request_id)
     select $1::uuid, $2::uuid, $3::uuid, $4::text, $5::text, $6::jsonb, $7::bigint, $8::timestamptz,
            case when $5::text = 'RUNNING' then now() end, $9::text, $10::text, $11::text
     from b
     returning id
   ), e as (
     insert into credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
     select $2::uuid, 'HOLD', $7::bigint, -$7::bigint, $7::bigint, id from j
   )
   select (select available from b) as after, exists (select 1 from k) as revoked`,
);

/**
 * The holds of several requests in one statement, a member per array element (the inputs in one
 * JSON array, which needs no escaping as an array literal would). Each account's balance row is
 * locked once (in account order), its members are taken in arrival order while their running sum fits what it has
 * (a member of a revoked key takes nothing and counts for nothing), and the balance moves by the
 * sum of those taken. One row per member, in arrival order: `held`, `revoked`, the account's
 * available credits after the member (`after`, when held) and after the whole batch (`available`).
 */
export const OPEN_JOBS = statement(
  'open_jobs',
  `with m as (
     select * from rows from (
       unnest($1::uuid[]), unnest($2::uuid[]), unnest($3::uuid[]), unnest($4::text[]), unnest($5::text[]), jsonb_array_elements($6::jsonb),
       unnest($7::bigint[]), unnest($8::timestamptz[]), unnest($9::text[]), unnest($10::text[]), unnest($11::text[])
     ) with ordinality as m(job_id, account_id, api_key_id, operation, status, input, amount, deadline_at, idempotency_key, request_hash, request_id, ord)
   ), revoked as (
     select m.ord from m join api_key k on k.id = m.api_key_id where k.revoked_at is not null
   ), locked as (
     select c.account_id, c.available from credit_balance c
     where c.account_id in (select account_id from m)
     order by c.account_id
     for update
   ), ranked as (
     select m.*, l.available - sum(m.amount) over (partition by m.account_id order by m.ord) as after
     from m join locked l on l.account_id = m.account_id
     where m.ord not in (select ord from revoked)
   ), taken as (
     select * from ranked where after >= 0
   ), totals as (
     select account_id, sum(amount) as total from taken group by account_id
   ), b as (
     update credit_balance c set available = c.available - t.total, held = c.held + t.total, updated_at = now()
     from totals t where c.account_id = t.account_id
     returning c.account_id, c.available
   ), j as (
     insert into job (id, account_id, api_key_id, operation, status, input, hold_amount, deadline_at, started_at, idempotency_key, request_hash, request_id)
     select job_id, account_id, api_key_id, operation, status, input, amount, deadline_at,
            case when status = 'RUNNING' then now() end, idempotency_key, request_hash, request_id
     from taken order by ord
   ), e as (
     insert into credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
     select account_id, 'HOLD', amount, -amount, amount, job_id from taken order by ord
   )
   select m.ord, r.ord is not null as revoked, t.ord is not null as held, t.after,
          coalesce(b.available, l.available, 0) as available
   from m
   left join revoked r on r.ord = m.ord
   left join taken t on t.ord = m.ord
   left join locked l on l.account_id = m.account_id
   left join b on b.account_id = m.account_id
   order by m.ord`,
);

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

export const MARK_RUNNING = statement(
  'mark_running',
  `update job set status = 'RUNNING', started_at = now() where id = $1::uuid and status = 'QUEUED'
   returning input, hold_amount, deadline_at, request_id`,
);

export const REQUEUE = statement(
  'requeue',
  `update job set status = 'QUEUED', progress = 0, started_at = null where id = $1::uuid and status = 'RUNNING' returning id`,
);

export const STATUS = statement('status', `select status from job where id = $1::uuid`);

/** What a succeeded job charged and left available (a capture whose answer was lost reads it here). */
export const SETTLEMENT = statement(
  'settlement',
  `select credits_charged, balance_after from job where id = $1::uuid and status = 'SUCCEEDED'`,
);

export const SET_PROGRESS = statement(
  'set_progress',
  `update job set progress = $1::real where id = $2::uuid and status = 'RUNNING' and progress < $1::real`,
);

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

export const AVAILABLE_OF_JOB = statement(
  'available_of_job',
  `select c.available from credit_balance c join job j on j.account_id = c.account_id where j.id = $1::uuid`,
);

export const BALANCE = statement('balance', `select available, held from credit_balance where account_id = $1::uuid`);
