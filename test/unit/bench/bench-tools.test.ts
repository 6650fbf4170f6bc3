import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ledgerProblems, type LedgerTotals } from '../../../bench/bench-data.js';
import { summarizeProfile } from '../../../bench/cpu-profile.js';
import { runLoad, runSpreadLoad } from '../../../bench/load.js';
import { machineShare, watchMachine, type MachineSlice } from '../../../bench/machine.js';
import { targets, type Row } from '../../../bench/scenarios.js';
import { createTestDatabase } from '../../support/test-database.js';

describe('the bench load', () => {
  it('drains: every request the server finished was answered to the load, so a ledger can be checked to the credit', async () => {
    let finished = 0;
    const server = createServer((req, res) => {
      req.resume();
      // Slow enough that requests are always in flight when time is up.
      setTimeout(() => {
        finished++;
        res.writeHead(200, { 'content-type': 'application/json' }).end(finished % 5 ? '{"status":"SUCCEEDED"}' : '{"status":"FAILED"}');
      }, 30);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/parse`;
      const result = await runLoad({
        url,
        body: '{}',
        keys: ['a', 'b', 'c'],
        connections: 8,
        seconds: 1,
        isOk: (b) => b.includes('SUCCEEDED'),
      });
      expect(result.responses).toBeGreaterThan(50);
      expect(result.responses).toBe(finished);
      expect(result.ok).toBe(finished - Math.floor(finished / 5));
      expect(result.errors).toBe(0);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
  it('sends a body of its own with each request when asked, and counts the successes that lack what they should hold', async () => {
    const seen: string[] = [];
    const server = createServer(async (req, res) => {
      let body = '';
      for await (const chunk of req) body += chunk;
      seen.push(body);
      const n = Number(JSON.parse(body).n);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'SUCCEEDED', complete: n % 3 !== 0 }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      let n = 0;
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/parse`;
      const result = await runLoad({
        url,
        body: '{}',
        bodyFor: () => JSON.stringify({ n: n++ }),
        keys: ['a'],
        connections: 4,
        seconds: 0.5,
        isOk: (b) => b.includes('SUCCEEDED'),
        isComplete: (b) => JSON.parse(b).complete === true,
      });
      expect(result.ok).toBe(seen.length);
      expect(new Set(seen).size).toBe(seen.length);
      expect(result.incomplete).toBe(seen.filter((b) => Number(JSON.parse(b).n) % 3 === 0).length);
      expect(result.incomplete).toBeGreaterThan(0);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('the load across gateways', () => {
  it('spreads connections and keys round robin over every server, drains each, and counts the answers over the time they took side by side', async () => {
    const servers = [0, 1, 2].map((i) => {
      const seen = { keys: new Set<string>(), sockets: new Set<unknown>(), answered: 0 };
      const server = createServer((req, res) => {
        req.resume();
        seen.keys.add(req.headers.authorization ?? '');
        seen.sockets.add(req.socket);
        setTimeout(() => {
          seen.answered++;
          res.writeHead(200, { 'content-type': 'application/json' }).end(`{"status":"SUCCEEDED","server":${i}}`);
        }, 20);
      });
      return { server, seen };
    });
    await Promise.all(servers.map(({ server }) => new Promise<void>((r) => server.listen(0, '127.0.0.1', r))));
    try {
      const urls = servers.map(({ server }) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/parse`);
      const keys = Array.from({ length: 9 }, (_, k) => `k${k}`);
      const result = await runSpreadLoad(
        { url: '', body: '{}', keys, connections: 7, seconds: 1, isOk: (b) => b.includes('SUCCEEDED') },
        urls,
      );
      // 7 connections over 3 servers: 3, 2 and 2; server j sees keys j, j + 3, j + 6 only.
      expect(servers.map(({ seen }) => seen.sockets.size)).toEqual([3, 2, 2]);
      servers.forEach(({ seen }, j) => expect([...seen.keys].sort()).toEqual([`Bearer k${j}`, `Bearer k${j + 3}`, `Bearer k${j + 6}`]));
      const answered = servers.reduce((sum, { seen }) => sum + seen.answered, 0);
      expect(result.responses).toBe(answered);
      expect(result.ok).toBe(answered);
      // Side by side, not one after the other: about one second of load, not three.
      expect(result.reqPerSec).toBeGreaterThan((answered / 1.6) | 0);
      await expect(runSpreadLoad({ url: '', body: '{}', keys, connections: 2, seconds: 1, isOk: () => true }, urls)).rejects.toThrow(
        '2 connections cannot reach 3 servers',
      );
    } finally {
      for (const { server } of servers) {
        server.closeAllConnections();
        server.close();
      }
    }
  });
});

describe('where the machine went', () => {
  const slice = (
    wallMs: number,
    gatewaysMs: number,
    postgresMs: number,
    busyMs: number,
    waits: Record<string, number>,
    samples: number,
  ): MachineSlice => ({
    wallMs,
    busyMs,
    partsMs: { gateways: gatewaysMs, 'load generator': 10 },
    postgresMs,
    database: { commits: 30, rowsWritten: 120, blocksRead: 3, walBytes: 60_000 },
    waits,
    samples,
  });

  it('sums stretches into shares of every core, leaves the rest to other, and averages the backends by state', () => {
    const cores = availableParallelism();
    const { cpu, perAnswer, backends } = machineShare(
      [slice(1000, 400, 300, 900, { CPU: 3, 'IO:WALSync': 6 }, 10), slice(1000, 200, 100, 500, { CPU: 1 }, 10)],
      60,
    );
    const pct = (ms: number) => Math.round((1000 * ms) / (2000 * cores)) / 10;
    expect(cpu.parts).toEqual({ gateways: pct(600), 'load generator': pct(20) });
    expect(cpu.postgres).toBe(pct(400));
    expect(cpu.machine).toBe(pct(1400));
    expect(cpu.other).toBeCloseTo(pct(1400) - pct(600) - pct(20) - pct(400), 1);
    expect(perAnswer).toEqual({ commits: 1, rowsWritten: 4, blocksRead: 0.1, walBytes: 2000 });
    expect(Object.entries(backends)).toEqual([
      ['IO:WALSync', 0.3],
      ['CPU', 0.2],
    ]);
  });

  it('measures a busy process and what PostgreSQL counted for the database', async () => {
    const database = await createTestDatabase();
    const db = new pg.Client({ connectionString: database.clientUrl });
    await db.connect();
    // Spins until killed: a process watched must still run when the watch stops (as the gateways do).
    const busy = spawn(process.execPath, ['-e', 'for (;;);']);
    try {
      const spun = () => {
        const fields = readFileSync(`/proc/${busy.pid}/stat`, 'utf8').split(') ')[1].split(' ');
        return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
      };
      const watch = await watchMachine(db, { spinner: [busy.pid!] });
      const from = spun();
      await db.query('create temporary table t (n int)');
      await db.query('insert into t select generate_series(1, 500)');
      // Until it has spun 300 ms of CPU since the watch began, however busy the machine (at least 600 ms).
      const started = Date.now();
      while (Date.now() - started < 600 || spun() - from < 300) await new Promise((resolve) => setTimeout(resolve, 50));
      const { partsMs, busyMs, database, samples } = await watch.stop();
      expect(partsMs.spinner).toBeGreaterThanOrEqual(250);
      expect(busyMs).toBeGreaterThanOrEqual(partsMs.spinner - 20);
      expect(database.rowsWritten).toBeGreaterThanOrEqual(500);
      expect(database.commits).toBeGreaterThanOrEqual(2);
      expect(samples).toBeGreaterThan(3);
    } finally {
      busy.kill();
      await db.end();
      await database.close();
    }
  });
});

describe('the ledger check', () => {
  const before: LedgerTotals = { available: 1000, held: 0, succeeded: 10, open: 0, unbalanced: 0 };
  it('passes an exact ledger and names every way one can be off', () => {
    expect(ledgerProblems(before, { ...before, available: 990, succeeded: 20 }, 10, 1)).toEqual([]);
    expect(ledgerProblems(before, { available: 989, held: 1, succeeded: 21, open: 1, unbalanced: 2 }, 10, 1)).toEqual([
      'charged 11 credits for 10 answers at 1',
      '11 jobs succeeded for 10 answers',
      '1 credits still held',
      '1 jobs still open',
      '2 accounts whose entries do not sum to their balance',
    ]);
  });
});

describe('the CPU profile summary', () => {
  it('counts self time only inside the window, by function and by package, leaving idle out of the busy time', () => {
    const frame = (functionName: string, url: string, lineNumber: number) => ({
      functionName,
      url,
      lineNumber,
      columnNumber: 0,
      scriptId: '0',
    });
    const profile = {
      nodes: [
        { id: 1, callFrame: frame('(root)', '', -1), children: [2, 3, 4, 5] },
        { id: 2, callFrame: frame('(idle)', '', -1) },
        {
          id: 3,
          callFrame: frame('query', 'file:///app/node_modules/pg/lib/client.js', 9),
          children: [7],
          positionTicks: [
            { line: 12, ticks: 3 },
            { line: 11, ticks: 1 },
          ],
        },
        { id: 4, callFrame: frame('parse', `file://${process.cwd()}/dist/modules/parse/parse.service.js`, 40) },
        { id: 5, callFrame: frame('(garbage collector)', '', -1) },
        { id: 7, callFrame: frame('Writable.write', 'node:internal/streams/writable', 505), children: [6] },
        { id: 6, callFrame: frame('writeBuffer', '', -1) },
      ],
      startTime: 1_000_000,
      endTime: 1_010_000,
      // One sample a millisecond: 2 before the window, then pg ×3, parse ×2, idle ×3, a socket write from pg, gc, then 2 after.
      samples: [4, 4, 3, 3, 3, 4, 4, 2, 2, 2, 6, 5, 3, 3],
      timeDeltas: Array(14).fill(1000),
    };
    const dir = mkdtempSync(join(tmpdir(), 'bench-profile-'));
    try {
      const file = join(dir, 'p.cpuprofile');
      writeFileSync(file, JSON.stringify(profile));
      const summary = summarizeProfile(file, [{ from: 1_003_000, to: 1_012_000 }], 3);
      expect(summary.windowMs).toBe(10);
      expect(summary.busyMs).toBe(7);
      expect(summary.top).toEqual([
        { name: 'query pg/lib/client.js:10', area: 'pg', ms: 3, share: 42.9, hotLine: 12, via: null },
        { name: 'parse dist/modules/parse/parse.service.js:41', area: 'mediagate', ms: 2, share: 28.6, hotLine: null, via: null },
        { name: 'writeBuffer', area: 'V8 / native', ms: 1, share: 14.3, hotLine: null, via: 'query pg/lib/client.js:10' },
      ]);
      // The socket write counts to pg, which made it.
      expect(summary.areas).toEqual([
        { area: 'pg', ms: 4, share: 57.1 },
        { area: 'mediagate', ms: 2, share: 28.6 },
        { area: '(garbage collector)', ms: 1, share: 14.3 },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the targets table', () => {
  const row = (scenario: string, reqPerSec: number, p99: number, rssMb: number): Row => ({
    scenario,
    label: scenario,
    connections: 50,
    reqPerSec,
    p50: 1,
    p99,
    ok: reqPerSec,
    failed: 0,
    statusCodes: {},
    rssMb,
    cpuMsPerAnswer: 0.2,
    vsReference: null,
    vsProxy: null,
    ledger: 'PASS',
    ledgerProblems: [],
  });
  const rows = [
    row('ref-hot', 500, 90, 120),
    row('ref-spread', 600, 80, 120),
    row('rest-hot', 900, 40, 240),
    row('rest-spread', 1000, 60, 260),
    row('graphql-spread', 840, 50, 230),
    row('rest-ordinary', 400, 90, 230),
  ];

  it('reads each target off the highest connection count and judges it', () => {
    expect(targets(rows).map((t) => [t.value, t.met])).toEqual([
      [1.8, true],
      [1.67, true],
      [0.84, false],
      [60, true],
      [260, false],
      [0.9, true],
      [0.4, true],
    ]);
  });

  it('judges ordinary pages against stated pages, and shows nothing when they were not measured', () => {
    const ordinary = (list: Row[]) => targets(list).find((t) => t.name.includes('ordinary pages'))!;
    expect(ordinary([...rows.slice(0, -1), row('rest-ordinary', 200, 90, 230)])).toMatchObject({ value: 0.2, met: false });
    expect(ordinary(rows.slice(0, -1))).toMatchObject({ value: null, met: null });
  });

  it('shows the memory of a gateway that holds the embedded database, without judging it against the gateway’s target', () => {
    const memory = targets(rows, { embedded: true }).find((t) => t.name.includes('RSS'))!;
    expect(memory).toMatchObject({ value: 260, met: null });
    expect(memory.floor).toMatch(/not judged/);
  });
});
