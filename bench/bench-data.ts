import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { generateKey, hashKey } from '../src/modules/api-keys/api-key.format.js';

/** The gateway's tables the parse path touches; the reference gets its own copy of each. */
const PIPELINE_TABLES = ['account', 'membership', 'api_key', 'credit_balance', 'job', 'credit_entry'];

/**
 * Copies the gateway's pipeline tables, as its migrations left them (columns, defaults, checks,
 * indexes, identity, foreign keys among them), into `schema`, so the reference writes exactly the
 * rows the gateway writes, with the same constraints to check. Triggers are not copied (the obvious
 * pipeline has none): their names are returned, so the report can say what the gateway does more.
 */
export async function copyPipelineSchema(db: pg.Client, schema: string): Promise<string[]> {
  await db.query(`create schema ${schema}`);
  for (const table of PIPELINE_TABLES) await db.query(`create table ${schema}.${table} (like public.${table} including all)`);
  const { rows } = await db.query<{ tbl: string; name: string; def: string }>(
    `select c.conrelid::regclass::text as tbl, c.conname as name, pg_get_constraintdef(c.oid) as def
       from pg_constraint c where c.contype = 'f' and c.connamespace = 'public'::regnamespace
        and c.conrelid::regclass::text = any($1) and c.confrelid::regclass::text = any($1)`,
    [PIPELINE_TABLES],
  );
  for (const fk of rows)
    await db.query(
      `alter table ${schema}.${fk.tbl} add constraint ${fk.name} ${fk.def.replace(/REFERENCES (\w+)/, `REFERENCES ${schema}.$1`)}`,
    );
  const triggers = await db.query<{ name: string }>(
    `select t.tgrelid::regclass::text || '.' || t.tgname as name from pg_trigger t
      where not t.tgisinternal and t.tgrelid::regclass::text = any($1) order by 1`,
    [PIPELINE_TABLES],
  );
  return triggers.rows.map((t) => t.name);
}

/** Keys of the bench's accounts: one hot account, and `spread` accounts with one key each. */
export interface BenchKeys {
  hot: string;
  spread: string[];
}

/**
 * Creates 1 + `spread` member accounts with credits (a GRANT entry each, as the ledger would write
 * it) and one API key each, in one statement: keys in the gateway's format, hashed with its pepper.
 */
export async function seedAccounts(
  db: pg.Client,
  schema: string,
  spread: number,
  pepper: string,
  credits: { hot: number; each: number },
): Promise<BenchKeys> {
  const rows = Array.from({ length: spread + 1 }, (_, i) => ({
    accountId: randomUUID(),
    keyId: randomUUID(),
    credits: i === 0 ? credits.hot : credits.each,
    ...generateKey(),
  }));
  await db.query(
    `with input as (
       select * from unnest($1::uuid[], $2::bigint[], $3::uuid[], $4::text[], $5::bytea[], $6::text[]) as t(account_id, credits, key_id, public_id, secret_hash, last4)
     ), a as (
       insert into ${schema}.account (id, name) select account_id, 'bench' from input returning id
     ), m as (
       insert into ${schema}.membership (account_id, status, period_end) select id, 'active', now() + interval '30 days' from a
     ), b as (
       insert into ${schema}.credit_balance (account_id, available, held) select id, credits, 0 from a join input on input.account_id = a.id
     ), e as (
       insert into ${schema}.credit_entry (account_id, kind, amount, available_delta, held_delta, reason)
       select id, 'GRANT', credits, credits, 0, 'bench credits' from a join input on input.account_id = a.id
     )
     insert into ${schema}.api_key (id, account_id, name, public_id, secret_hash, last4, scopes)
     select key_id, id, 'bench', public_id, secret_hash, last4, '{parse,transcribe,read,keys}' from a join input on input.account_id = a.id`,
    [
      rows.map((r) => r.accountId),
      rows.map((r) => r.credits),
      rows.map((r) => r.keyId),
      rows.map((r) => r.publicId),
      rows.map((r) => hashKey(r.key, pepper)),
      rows.map((r) => r.key.slice(-4)),
    ],
  );
  return { hot: rows[0].key, spread: rows.slice(1).map((r) => r.key) };
}

/** The ledger of one schema, summed over every account. */
export interface LedgerTotals {
  available: number;
  held: number;
  succeeded: number;
  /** Jobs still QUEUED or RUNNING. */
  open: number;
  /** Accounts whose entries do not sum to their balance. */
  unbalanced: number;
}

export async function ledgerTotals(db: pg.Client, schema: string): Promise<LedgerTotals> {
  const { rows } = await db.query(
    `select (select coalesce(sum(available), 0) from ${schema}.credit_balance)::text as available,
            (select coalesce(sum(held), 0) from ${schema}.credit_balance)::text as held,
            (select count(*) from ${schema}.job where status = 'SUCCEEDED')::int as succeeded,
            (select count(*) from ${schema}.job where status in ('QUEUED', 'RUNNING'))::int as open,
            (select count(*) from ${schema}.credit_balance b
               left join (select account_id, sum(available_delta) as a, sum(held_delta) as h from ${schema}.credit_entry group by account_id) e using (account_id)
              where b.available <> coalesce(e.a, 0) or b.held <> coalesce(e.h, 0))::int as unbalanced`,
  );
  const r = rows[0];
  return { available: Number(r.available), held: Number(r.held), succeeded: r.succeeded, open: r.open, unbalanced: r.unbalanced };
}

/** Totals once every job the load opened has been resolved (a few seconds at most). */
export async function settledTotals(db: pg.Client, schema: string): Promise<LedgerTotals> {
  const until = Date.now() + 5000;
  for (;;) {
    const totals = await ledgerTotals(db, schema);
    if (totals.open === 0 || Date.now() > until) return totals;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The ledger to the credit after a scenario: each successful answer charged `price` once and no
 * other credit moved, one SUCCEEDED job per answer, nothing held or open, every account's entries
 * summing to its balance. Empty when all holds.
 */
export function ledgerProblems(before: LedgerTotals, after: LedgerTotals, answers: number, price: number): string[] {
  const problems: string[] = [];
  const charged = before.available - after.available;
  if (charged !== answers * price) problems.push(`charged ${charged} credits for ${answers} answers at ${price}`);
  if (after.succeeded - before.succeeded !== answers)
    problems.push(`${after.succeeded - before.succeeded} jobs succeeded for ${answers} answers`);
  if (after.held !== 0) problems.push(`${after.held} credits still held`);
  if (after.open !== 0) problems.push(`${after.open} jobs still open`);
  if (after.unbalanced !== 0) problems.push(`${after.unbalanced} accounts whose entries do not sum to their balance`);
  return problems;
}

/** A database of the bench's own on the server `adminUrl` names, dropped (with force) at the end. */
export async function createScratchDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `mediagate_bench_${Date.now()}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    await c.query(sql);
    await c.end();
  };
  await admin(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) };
}
