import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { createScratchDatabase, ledgerProblems, seedAccounts, settledTotals, type BenchKeys } from './bench-data.js';
import { makeOrdinaryMedia } from './bench-media.js';
import { runLoad, runSpreadLoad, watchProcess } from './load.js';
import { machineShare, watchMachine, type CpuShare, type DatabaseWork, type MachineSlice } from './machine.js';
import { BENCH_PEPPER, forkServer, gatewayEnvironment, startGateway, tuningOf, type BenchProcess } from './processes.js';
import { markdownTable, measured, round2, writeResults, type Measured, type Scenario } from './scenarios.js';

/** What `npm run bench -- --gateways N` runs unless `--only` says otherwise: the parses of a stated page. */
export const PARSE_SCENARIOS: readonly string[] = ['rest-hot', 'rest-spread', 'graphql-spread'];

export interface GatewaysOptions {
  seconds: number;
  rounds: number;
  levels: number[];
  warmup: number;
  accounts: number;
  json: string;
  nodeFlags: string[];
}

/** One scenario through n gateways at one connection count (RSS: the highest of any one gateway; CPU: all of theirs together). */
export interface GatewaysRow extends Measured {
  scenario: string;
  label: string;
  gateways: number;
  connections: number;
  /** req/s over the same scenario through one gateway at the same connections. */
  vsOne: number | null;
  ledger: 'PASS' | 'FAIL';
  /** Where the machine's CPU went meanwhile, in per cent of all its cores. */
  cpu: CpuShare;
  /** PostgreSQL's own counters for the database, per successful answer. */
  database: DatabaseWork;
  /** The database's active backends, on average, by what they were doing (`CPU`) or waiting for (pg_stat_activity's wait event). */
  backends: Record<string, number>;
}

/**
 * `npm run bench -- --gateways N`: N `mediagate serve` processes (WORKER_CONCURRENCY=0, as the
 * deployments run them) started together on one scratch PostgreSQL database (they migrate once,
 * under the lock), each scenario's load spread round robin over the first n of them for n = 1..N,
 * the ledger checked to the credit after every stretch. The values of n take turns inside each
 * round, so what else the machine does falls on all of them alike. Returns the exit code.
 */
export async function benchAcrossGateways(
  count: number,
  scenarios: readonly Scenario[],
  adminUrl: string,
  options: GatewaysOptions,
): Promise<number> {
  const work = mkdtempSync(join(tmpdir(), 'mediagate-bench-gateways-'));
  const scratch = await createScratchDatabase(adminUrl);
  const processes: BenchProcess[] = [];
  let exitCode = 0;
  try {
    const mediaDir = scenarios.some((s) => s.ordinary) ? await makeOrdinaryMedia(work, process.env.FFMPEG_PATH ?? 'ffmpeg') : undefined;
    const page = await forkServer('./page.server.js', { ...process.env, BENCH_MEDIA_DIR: mediaDir });
    processes.push(page);
    const pepper = BENCH_PEPPER;
    const env = gatewayEnvironment({ work, pageUrl: page.url, databaseUrl: scratch.url, extra: { WORKER_CONCURRENCY: '0' } });
    const config = loadConfig(env);
    const gateways = await Promise.all(
      Array.from({ length: count }, (_, i) => startGateway(env, join(work, `gateway-${i + 1}.log`), options.nodeFlags)),
    );
    processes.push(...gateways);

    const db = new pg.Client({ connectionString: scratch.url });
    await db.connect();
    const keys: BenchKeys = await seedAccounts(db, 'public', options.accounts, pepper, { hot: 1_000_000_000, each: 1_000_000 });
    const pool = process.env.DATABASE_POOL_SIZE ?? '10';
    console.log(
      `mediagate bench across gateways: ${count} gateway${count > 1 ? 's' : ''} (mediagate serve, WORKER_CONCURRENCY=0, pool ${pool} each, ${tuningOf(env)}) on one PostgreSQL database; ` +
        `${options.seconds} s per scenario and gateway count in ${options.rounds} turn${options.rounds > 1 ? 's' : ''} at ${options.levels.join(' and ')} connections, spread round robin; ${options.accounts} spread accounts; ${availableParallelism()} cores`,
    );

    const pageUrl = `${page.url}/watch`;
    let ordinaryPages = 0;
    const specOf = (s: Scenario, connections: number, seconds: number) => ({
      url: '',
      body: s.body(pageUrl),
      bodyFor: s.ordinary ? () => s.body(`${page.url}/ordinary/${ordinaryPages++}`) : undefined,
      keys: s.keys === 'hot' ? [keys.hot] : keys.spread,
      connections,
      seconds,
      isOk: s.isOk,
      isComplete: s.isComplete,
    });
    // JIT and pools warm in every gateway before anything counts.
    if (options.warmup > 0)
      await Promise.all(
        gateways.map((g) =>
          runLoad({ ...specOf(scenarios[0], Math.min(...options.levels), options.warmup), url: g.url + scenarios[0].path }),
        ),
      );

    /** One stretch of one scenario through the first n gateways, with the ledger checked after it. */
    const measure = async (s: Scenario, n: number, connections: number, seconds: number) => {
      const used = gateways.slice(0, n);
      await db.query('vacuum (analyze)');
      const before = await settledTotals(db, 'public');
      // Every gateway, the idle ones too: what they spend is the gateways' share of the machine.
      const machine = await watchMachine(db, { gateways: gateways.map((g) => g.pid), 'page server': [page.pid] });
      const usage = used.map((g) => watchProcess(g.pid));
      const load = await runSpreadLoad(
        specOf(s, connections, seconds),
        used.map((g) => g.url + s.path),
      );
      const seen = usage.map((u) => u.stop());
      const spent = await machine.stop();
      const problems = ledgerProblems(before, await settledTotals(db, 'public'), s.charges ? load.ok : 0, config.prices.parse);
      return { load, rssMb: Math.max(...seen.map((u) => u.rssMb)), cpuMs: seen.reduce((sum, u) => sum + u.cpuMs, 0), problems, spent };
    };

    const rows: GatewaysRow[] = [];
    const counts = Array.from({ length: count }, (_, i) => i + 1);
    for (const connections of options.levels) {
      const slices = new Map<string, Awaited<ReturnType<typeof measure>>[]>();
      const id = (s: Scenario, n: number) => `${s.id}/${n}`;
      for (let round = 0; round < options.rounds; round++) {
        for (const n of counts) {
          for (const s of scenarios) {
            const slice = await measure(s, n, connections, options.seconds / options.rounds);
            slices.set(id(s, n), [...(slices.get(id(s, n)) ?? []), slice]);
          }
        }
      }
      for (const s of scenarios) {
        for (const n of counts) {
          const parts = slices.get(id(s, n))!;
          const { figures } = measured(parts);
          const spent = machineShare(
            parts.map((p): MachineSlice => p.spent),
            figures.ok,
          );
          const problems = figures.ledgerProblems;
          const one = rows.find((x) => x.scenario === s.id && x.gateways === 1 && x.connections === connections);
          const row: GatewaysRow = {
            scenario: s.id,
            label: s.label,
            gateways: n,
            connections,
            ...figures,
            vsOne: one?.reqPerSec ? round2(figures.reqPerSec / one.reqPerSec) : null,
            ledger: problems.length ? 'FAIL' : 'PASS',
            cpu: spent.cpu,
            database: spent.perAnswer,
            backends: spent.backends,
          };
          rows.push(row);
          if (problems.length) exitCode = 1;
          console.log(
            `  ${connections} conns, ${s.id}, ${n} gateway${n > 1 ? 's' : ''}: ${row.reqPerSec} req/s, p99 ${row.p99} ms, ${row.ok} ok, ${row.failed} failed${problems.length ? `, LEDGER: ${problems.join('; ')}` : ''}`,
          );
        }
      }
    }
    await db.end();

    console.log(
      '\n' +
        markdownTable(
          [
            'scenario',
            'gateways',
            'conns',
            'req/s',
            'p50 ms',
            'p99 ms',
            'ok',
            'failed',
            'RSS MB (each, max)',
            'CPU ms/ok (all gateways)',
            '÷ 1 gateway',
            'ledger',
          ],
          rows.map((r) => [
            r.label,
            r.gateways,
            r.connections,
            r.reqPerSec,
            r.p50,
            r.p99,
            r.ok,
            r.failed,
            r.rssMb,
            r.cpuMsPerAnswer,
            r.vsOne === null || r.gateways === 1 ? '—' : r.vsOne,
            r.ledger,
          ]),
        ),
    );
    const parts = [...new Set(rows.flatMap((r) => Object.keys(r.cpu.parts)))];
    console.log(
      "\nWhere the machine's CPU went (per cent of all its cores over the stretches), and PostgreSQL's own counters per successful answer\n" +
        markdownTable(
          [
            'scenario',
            'gateways',
            'conns',
            'req/s',
            'machine busy %',
            ...parts.map((p) => `${p} %`),
            'PostgreSQL %',
            'other %',
            'commits/ok',
            'rows written/ok',
            'blocks read/ok',
            'WAL bytes/ok',
            'active backends (avg): state',
          ],
          rows.map((r) => [
            r.label,
            r.gateways,
            r.connections,
            r.reqPerSec,
            r.cpu.machine,
            ...parts.map((p) => r.cpu.parts[p] ?? 0),
            r.cpu.postgres,
            r.cpu.other,
            r.database.commits,
            r.database.rowsWritten,
            r.database.blocksRead,
            r.database.walBytes,
            Object.entries(r.backends)
              .slice(0, 4)
              .map(([state, n]) => `${n} ${state}`)
              .join(', '),
          ]),
        ),
    );
    writeResults(options.json, { database: 'PostgreSQL (scratch database)', gateways: count, ...options, rows }, exitCode !== 0);
  } catch (err) {
    console.error(err);
    exitCode = 1;
  } finally {
    for (const p of processes.reverse()) await p.stop();
    for (let i = 1; exitCode && i <= count; i++) {
      const log = join(work, `gateway-${i}.log`);
      if (existsSync(log)) console.error(`gateway ${i} log (end):\n${readFileSync(log, 'utf8').slice(-2000)}`);
    }
    await scratch.drop();
    rmSync(work, { recursive: true, force: true });
  }
  return exitCode;
}
