import type pg from 'pg';
import { settle, type LedgerModel } from './ledger-model.js';
import { TIMING, type World } from './ledger-world.js';

/** A job row as the checks read it (amounts cast to int in SQL). */
export interface JobRow {
  id: string;
  account_id: string;
  status: string;
  hold_amount: number;
  credits_charged: number;
  balance_after: number | null;
  request_id: string | null;
  error_code: string | null;
}

/**
 * The ledger's invariants, each a query that returns the rows breaking it (none when it holds).
 * They cover the whole database, every run's accounts and whatever the gateway did in the
 * background, and say nothing about how the server writes its entries (one statement per
 * movement today, batched statements later): only what the rows must add up to.
 */
const INVARIANTS: { name: string; sql: string; params?: () => unknown[] }[] = [
  {
    name: 'the entries of each account sum to its balance; available and held are never negative',
    sql: `select coalesce(b.account_id, s.account_id) as account, b.available, b.held, s.a as entries_available, s.h as entries_held
            from credit_balance b
            full join (select account_id, sum(available_delta) as a, sum(held_delta) as h from credit_entry group by account_id) s on s.account_id = b.account_id
           where coalesce(b.available, 0) <> coalesce(s.a, 0) or coalesce(b.held, 0) <> coalesce(s.h, 0) or b.available < 0 or b.held < 0`,
  },
  {
    name: 'every hold belongs to a job, of the same account',
    sql: `select e.id, e.kind, e.job_id from credit_entry e left join job j on j.id = e.job_id
           where e.kind in ('HOLD', 'CAPTURE', 'RELEASE') and (j.id is null or j.account_id <> e.account_id)`,
  },
  {
    name: 'every hold resolves exactly once: open jobs unresolved; SUCCEEDED one capture of what it charged (≤ held); FAILED/CANCELED one release of all it held',
    sql: `select j.id, j.status, j.hold_amount, j.credits_charged, x.*
            from job j
            cross join lateral (
              select coalesce(sum(amount) filter (where kind = 'HOLD'), 0) as holds,
                     count(*) filter (where kind = 'CAPTURE') as captures, coalesce(sum(amount) filter (where kind = 'CAPTURE'), 0) as captured,
                     count(*) filter (where kind = 'RELEASE') as releases, coalesce(sum(amount) filter (where kind = 'RELEASE'), 0) as released
                from credit_entry e where e.job_id = j.id) x
           where not (
             x.holds = j.hold_amount and j.credits_charged <= j.hold_amount and x.captured <= x.holds
             and case when j.status in ('QUEUED', 'RUNNING') then x.captures + x.releases = 0 and j.credits_charged = 0
                      when j.status = 'SUCCEEDED' then x.captures = 1 and x.releases = 0 and x.captured = j.credits_charged
                      else x.captures = 0 and x.releases = 1 and x.released = x.holds and j.credits_charged = 0 end)`,
  },
  {
    name: "held is exactly the open jobs' holds",
    sql: `select b.account_id, b.held, o.open_held
            from credit_balance b
            left join (select account_id, sum(hold_amount) as open_held from job where status in ('QUEUED', 'RUNNING') group by account_id) o on o.account_id = b.account_id
           where b.held <> coalesce(o.open_held, 0)`,
  },
  {
    name: 'no job stays QUEUED or RUNNING past its deadline plus one sweep interval',
    sql: `select id, status, deadline_at, now() - deadline_at as late from job
           where status in ('QUEUED', 'RUNNING') and deadline_at + make_interval(secs => $1) < now()`,
    params: () => [TIMING.sweepIntervalSeconds + TIMING.sweepGraceSeconds],
  },
  {
    name: 'an idempotency key is charged once: at most one SUCCEEDED job per account and key',
    sql: `select account_id, idempotency_key, count(*) from job
           where status = 'SUCCEEDED' and idempotency_key is not null group by 1, 2 having count(*) > 1`,
  },
];

/** Runs every invariant in the caller's transaction; returns the broken ones, with their rows. */
export async function invariantProblems(client: pg.ClientBase): Promise<string[]> {
  const problems: string[] = [];
  for (const inv of INVARIANTS) {
    const { rows } = await client.query(inv.sql, inv.params?.() ?? []);
    if (rows.length) problems.push(`${inv.name}: ${JSON.stringify(rows.slice(0, 5))}`);
  }
  return problems;
}

/**
 * Runs every invariant, then settles the model's open jobs and compares its balances, all in one
 * REPEATABLE READ snapshot (the gateway keeps working in the background). Returns the problems.
 */
export async function checkInvariants(w: World, m: LedgerModel): Promise<string[]> {
  const problems: string[] = [];
  const client: pg.PoolClient = await w.sql.connect();
  try {
    await client.query('begin isolation level repeatable read read only');
    problems.push(...(await invariantProblems(client)));
    w.stats.invariantAssertions += INVARIANTS.length;
    const ids = m.accounts.map((a) => a.id);
    const balances = (
      await client.query<{ account_id: string; available: number; held: number }>(
        `select account_id, available::int, held::int from credit_balance where account_id = any($1)`,
        [ids],
      )
    ).rows;
    const jobs = (
      await client.query<JobRow>(
        `select id, account_id, status, hold_amount::int, credits_charged::int, balance_after::int, request_id, error_code from job where account_id = any($1)`,
        [ids],
      )
    ).rows;
    await client.query('commit');
    for (const acc of m.accounts) {
      for (const op of acc.ops) {
        if (op.state === 'lost' || op.state === 'sent') problems.push(`request ${op.requestId} is still ${op.state} between commands`);
        if (op.state === 'pending')
          settle(
            acc,
            op,
            jobs.find((j) => j.id === op.jobId),
            problems,
          );
      }
      const bal = balances.find((b) => b.account_id === acc.id) ?? { available: 0, held: 0 };
      const mine = jobs.filter((j) => j.account_id === acc.id);
      const charged = mine.filter((j) => j.status === 'SUCCEEDED').reduce((s, j) => s + j.credits_charged, 0);
      const openJobs = mine.filter((j) => j.status === 'QUEUED' || j.status === 'RUNNING');
      const pending = new Set(acc.ops.filter((o) => o.state === 'pending').map((o) => o.jobId));
      const unknown = openJobs.filter((j) => !pending.has(j.id));
      const checks: [boolean, string][] = [
        [
          bal.available + bal.held === acc.granted - acc.charged,
          `available ${bal.available} + held ${bal.held} ≠ granted ${acc.granted} − charged ${acc.charged}`,
        ],
        [charged === acc.charged, `the jobs charged ${charged}, the model ${acc.charged} (a replay or a failure was charged?)`],
        [unknown.length === 0, `open jobs the model does not know: ${unknown.map((j) => j.id).join(', ')}`],
        [pending.size > 0 || bal.held === 0, `held ${bal.held} with no open job`],
      ];
      for (const [ok, what] of checks) {
        w.stats.invariantAssertions += 1;
        if (!ok) problems.push(`account ${acc.id}: ${what}`);
      }
    }
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
  w.stats.invariantChecks += 1;
  return problems;
}
