import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type pg from 'pg';
import { processCpuTicks, ticksToMs } from './load.js';

/** Where a stretch's CPU went, in per cent of all the machine's cores over the stretch. */
export interface CpuShare {
  /** Every core's busy time (user, nice, system, irq, softirq, steal), from /proc/stat. */
  machine: number;
  /** The named processes (and their ended children), each. */
  parts: Record<string, number>;
  /** Every process whose command is `postgres`: the server and its backends. */
  postgres: number;
  /** What none of the above spent: other tenants' processes, the kernel's own threads. */
  other: number;
}

/** What PostgreSQL counted for one database over a stretch (pg_stat_database), and the WAL the whole server wrote meanwhile. */
export interface DatabaseWork {
  commits: number;
  rowsWritten: number;
  blocksRead: number;
  walBytes: number;
}

/** A stretch's raw figures, summed over the stretches of one row before they become shares. */
export interface MachineSlice {
  wallMs: number;
  busyMs: number;
  partsMs: Record<string, number>;
  postgresMs: number;
  database: DatabaseWork;
  /** Active backends of the database seen in each state (`CPU`, or the wait event), summed over `samples`. */
  waits: Record<string, number>;
  samples: number;
}

/** How long after going idle a backend's counts are sure to be in pg_stat_database (PGSTAT_MIN_INTERVAL is a second). */
const STATS_FLUSH_MS = 1100;

/** How often the database's active backends are looked at: what they wait for says where the time goes when the cores are not all busy. */
const WAIT_SAMPLE_MS = 50;

const machineBusyTicks = (): number => {
  const [, user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  return user + nice + system + irq + softirq + steal;
};

/** processCpuTicks, or 0 once the process is gone. */
const processTicks = (pid: number | string): number => {
  try {
    return processCpuTicks(pid);
  } catch {
    return 0;
  }
};

/** The CPU of every `postgres` process now: the server's backends live as long as the gateways' pools, so the set holds over a stretch. */
const postgresTicks = (): number => {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') ticks += processTicks(pid);
    } catch {
      // Ended between the listing and the read.
    }
  }
  return ticks;
};

async function databaseCounters(db: pg.Client): Promise<DatabaseWork> {
  const { rows } = await db.query<{ commits: string; written: string; reads: string; wal: string }>(
    `select xact_commit as commits, tup_inserted + tup_updated + tup_deleted as written, blks_read as reads, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') as wal
       from pg_stat_database where datname = current_database()`,
  );
  return {
    commits: Number(rows[0].commits),
    rowsWritten: Number(rows[0].written),
    blocksRead: Number(rows[0].reads),
    walBytes: Number(rows[0].wal),
  };
}

/**
 * Watches a stretch of load: the machine's busy time, the named processes' CPU (the gateways, the
 * page server), this process's own (the load generator), every PostgreSQL process's, and what
 * PostgreSQL counted for the database. A backend sends its counts to pg_stat_database at most once a
 * second, within a second of going idle, so they are read that long after the load has drained.
 */
export async function watchMachine(db: pg.Client, pids: Record<string, number[]>): Promise<{ stop(): Promise<MachineSlice> }> {
  const start = performance.now();
  const self = process.cpuUsage();
  const partTicks = () =>
    Object.fromEntries(Object.entries(pids).map(([name, list]) => [name, list.reduce((sum, pid) => sum + processTicks(pid), 0)]));
  const before = { busy: machineBusyTicks(), parts: partTicks(), postgres: postgresTicks(), database: await databaseCounters(db) };
  const waits: Record<string, number> = {};
  let samples = 0;
  let sampling: Promise<void> | null = null;
  const timer = setInterval(() => {
    sampling ??= db
      .query<{ state: string; n: number }>(
        `select coalesce(wait_event_type || ':' || wait_event, 'CPU') as state, count(*)::int as n
           from pg_stat_activity where datname = current_database() and state = 'active' and pid <> pg_backend_pid() group by 1`,
      )
      .then(({ rows }) => {
        samples += 1;
        for (const { state, n } of rows) waits[state] = (waits[state] ?? 0) + n;
      })
      .finally(() => (sampling = null));
  }, WAIT_SAMPLE_MS);
  return {
    async stop() {
      clearInterval(timer);
      await sampling;
      const wallMs = performance.now() - start;
      const busy = machineBusyTicks();
      const parts = partTicks();
      const postgres = postgresTicks();
      const own = process.cpuUsage(self);
      await new Promise((resolve) => setTimeout(resolve, STATS_FLUSH_MS));
      await db.query('select pg_stat_clear_snapshot()');
      const database = await databaseCounters(db);
      return {
        wallMs,
        busyMs: ticksToMs(busy - before.busy),
        // A process gone meanwhile reads 0 (a failed run, reported as such): counted as nothing, not less.
        partsMs: {
          ...Object.fromEntries(Object.entries(parts).map(([name, t]) => [name, ticksToMs(Math.max(0, t - before.parts[name]))])),
          'load generator': (own.user + own.system) / 1000,
        },
        postgresMs: ticksToMs(postgres - before.postgres),
        database: {
          commits: database.commits - before.database.commits,
          rowsWritten: database.rowsWritten - before.database.rowsWritten,
          blocksRead: database.blocksRead - before.database.blocksRead,
          walBytes: database.walBytes - before.database.walBytes,
        },
        waits,
        samples,
      };
    },
  };
}

/** Several stretches of one row as shares of all cores over their time together, and PostgreSQL's work per successful answer. */
export function machineShare(
  slices: readonly MachineSlice[],
  ok: number,
): { cpu: CpuShare; perAnswer: DatabaseWork; backends: Record<string, number> } {
  const capacity = slices.reduce((sum, s) => sum + s.wallMs, 0) * availableParallelism();
  const pct = (ms: number) => Math.round((1000 * ms) / capacity) / 10;
  const sum = (f: (s: MachineSlice) => number) => slices.reduce((total, s) => total + f(s), 0);
  const names = [...new Set(slices.flatMap((s) => Object.keys(s.partsMs)))];
  const parts = Object.fromEntries(names.map((name) => [name, pct(sum((s) => s.partsMs[name] ?? 0))]));
  const postgres = pct(sum((s) => s.postgresMs));
  const machine = pct(sum((s) => s.busyMs));
  const known = Object.values(parts).reduce((a, b) => a + b, 0) + postgres;
  const each = (f: (d: DatabaseWork) => number) => Math.round((100 * sum((s) => f(s.database))) / Math.max(ok, 1)) / 100;
  // The average number of the database's backends in each state while the load ran, busiest first.
  const samples = Math.max(
    sum((s) => s.samples),
    1,
  );
  const states = [...new Set(slices.flatMap((s) => Object.keys(s.waits)))];
  const backends = Object.fromEntries(
    states
      .map((state): [string, number] => [state, Math.round((100 * sum((s) => s.waits[state] ?? 0)) / samples) / 100])
      .sort((a, b) => b[1] - a[1]),
  );
  return {
    backends,
    cpu: { machine, parts, postgres, other: Math.max(0, Math.round(10 * (machine - known)) / 10) },
    perAnswer: {
      commits: each((d) => d.commits),
      rowsWritten: each((d) => d.rowsWritten),
      blocksRead: each((d) => d.blocksRead),
      walBytes: Math.round(sum((s) => s.database.walBytes) / Math.max(ok, 1)),
    },
  };
}
