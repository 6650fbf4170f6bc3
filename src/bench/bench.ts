import 'reflect-metadata';
import autocannon from 'autocannon';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { buildApp } from '../app.js';
import { loadConfig } from '../config.js';
import { migrate, openDatabase } from '../db/database.js';
import { createServices } from '../services.js';

/**
 * `npm run bench`: the gateway's own speed, measured end to end over loopback HTTP against the
 * configured database (embedded PGlite, or DATABASE_URL). Each scenario runs for BENCH_SECONDS
 * with BENCH_CONNECTIONS concurrent clients; afterwards the ledger is checked to the credit.
 */
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);

const page = createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(
    req.method === 'HEAD'
      ? undefined
      : `<html><head><title>Bench clip</title>
    <meta property="og:video" content="https://cdn.example/clip-720.mp4"><meta property="og:video:type" content="video/mp4">
    <meta property="og:video:height" content="720"><meta property="og:image" content="https://cdn.example/c.jpg"></head></html>`,
  );
});
await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
const pagePort = (page.address() as AddressInfo).port;

const dataDir = mkdtempSync(join(tmpdir(), 'mediagate-bench-'));
const config = loadConfig({
  ...process.env,
  NODE_ENV: 'production',
  API_KEY_PEPPER: 'bench-pepper-0123456789abcdef0123456789',
  MEDIAGATE_DATA_DIR: dataDir,
  FETCH_ALLOW_HOSTS: `127.0.0.1:${pagePort}`,
  LOG_LEVEL: 'silent',
  // The bench measures the pipeline, not the limiter's refusals.
  RATE_LIMIT_PER_MINUTE: '1000000000',
  RATE_LIMIT_IP_PER_MINUTE: '1000000000',
});
// On PostgreSQL the bench works in a database of its own, dropped at the end.
const benchDb = config.databaseUrl ? await createScratchDatabase(config.databaseUrl) : null;
const db = await openDatabase({ ...config, databaseUrl: benchDb?.url ?? null }, { inMemory: !benchDb });
await migrate(db.orm);
const services = createServices(config, db.orm, pino({ level: 'silent' }));
const app = await buildApp({ services, orm: db.orm });
await app.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

const initial = 10_000_000;
const rich = await services.accounts.create({ name: 'bench', credits: initial, membershipDays: 30 });
const richKey = (await services.apiKeys.create(rich.id, 'bench')).key;
const poor = await services.accounts.create({ name: 'bench-poor', credits: 0, membershipDays: 30 });
const poorKey = (await services.apiKeys.create(poor.id, 'bench')).key;

const json = (key: string) => ({ 'content-type': 'application/json', authorization: `Bearer ${key}` });
const scenarios = [
  {
    name: 'POST /api/parse: hold, fetch page, extract, capture',
    opts: { method: 'POST' as const, url: `${base}/api/parse`, headers: json(richKey), body: JSON.stringify({ url: `http://127.0.0.1:${pagePort}/watch`, quality: '720' }) },
  },
  {
    name: 'GraphQL { me }: key lookup, account read',
    opts: { method: 'POST' as const, url: `${base}/graphql`, headers: json(richKey), body: JSON.stringify({ query: '{ me { id credits { available held } } }' }) },
  },
  {
    name: 'POST /api/parse with no credits: 402',
    opts: { method: 'POST' as const, url: `${base}/api/parse`, headers: json(poorKey), body: JSON.stringify({ url: `http://127.0.0.1:${pagePort}/watch` }) },
  },
];

const rows: Array<Record<string, string | number>> = [];
for (const s of scenarios) {
  // The load runs in a worker thread so it does not share the server's event loop.
  const result = await autocannon({ ...s.opts, connections, duration: seconds, workers: 1 });
  rows.push({
    scenario: s.name,
    'req/s': Math.round(result.requests.average),
    'p50 ms': result.latency.p50,
    'p99 ms': result.latency.p99,
    '2xx': result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  });
}

// Correctness under load: every success charged exactly once, nothing left held, the ledger sums.
const count = await db.orm.em
  .fork()
  .getConnection()
  .execute<{ n: string }[]>(`select count(*) as n from job where account_id = ? and status = 'SUCCEEDED'`, [rich.id]);
const charged = Number(count[0].n);
const balance = await services.ledger.balance(rich.id);
const ledgerOk = balance.held === 0 && balance.available === initial - charged * config.prices.parse;

console.log(`mediagate bench: ${connections} connections, ${seconds} s per scenario, database: ${db.embedded ? 'embedded PGlite' : 'PostgreSQL'}`);
console.table(rows);
console.log(`ledger: ${charged} parses charged, available ${balance.available}, held ${balance.held}: ${ledgerOk ? 'exact' : 'MISMATCH'}`);

await app.close();
await services.close();
await db.close();
await benchDb?.drop();
page.close();
rmSync(dataDir, { recursive: true, force: true });
process.exit(ledgerOk ? 0 : 1);

async function createScratchDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
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
