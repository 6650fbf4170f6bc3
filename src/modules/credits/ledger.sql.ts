import type { Statement } from '../../db/hot-pool.js';

/**
 * The ledger's statements (grants and balances here; a task's hold, capture and release move with
 * its job row, one file per transition in modules/tasks/), each ONE statement (data-modifying CTEs)
 * and each prepared once per connection under its name. Locks are taken in one order everywhere, so no two of them can
 * deadlock: job rows before balance rows, and several rows of one table in the order of their id.
 */

/** A ledger statement, prepared under `ledger_<name>` (the task transitions' statements in modules/tasks/ are named alike). */
export const ledgerStatement = (name: string, text: string): Statement => ({ name: `ledger_${name}`, text });
const statement = ledgerStatement;

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

export const AVAILABLE_OF_JOB = statement(
  'available_of_job',
  `select c.available from credit_balance c join job j on j.account_id = c.account_id where j.id = $1::uuid`,
);

export const BALANCE = statement('balance', `select available, held from credit_balance where account_id = $1::uuid`);
