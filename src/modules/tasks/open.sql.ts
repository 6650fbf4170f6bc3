import { ledgerStatement as statement } from '../credits/ledger.sql.js';

// A task begins: its job row and its hold, in one statement (one per member in a batch).

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
