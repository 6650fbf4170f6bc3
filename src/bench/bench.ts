import 'reflect-metadata';
import autocannon from 'autocannon';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { buildApp } from '../app.js';
import { loadConfig } from '../config.js';
import { migrate, openDatabase } from '../db/database.js';
import { extractAudio, runTool } from '../media/ffmpeg.js';
import { createServices } from '../services.js';
import { startOpenAiLikeServer } from './openai-like.server.js';

/**
 * `npm run bench`: the gateway's own speed, measured end to end over loopback HTTP against the
 * configured database (embedded PGlite, or DATABASE_URL). Each scenario runs for BENCH_SECONDS
 * with BENCH_CONNECTIONS concurrent clients; afterwards the ledger is checked to the credit.
 */
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const LONG_MEDIA_MINUTES = Number(process.env.BENCH_LONG_MEDIA_MINUTES ?? 60);
const MS_PER_AUDIO_SECOND = Number(process.env.BENCH_WHISPER_MS_PER_AUDIO_SECOND ?? 5);

// A page that states what a parse needs (type with codecs, height, length), so nothing is probed.
const page = createServer((req, res) => {
  if (req.url === '/long.mp3') return void createReadStream(longMedia.path).pipe(res.writeHead(200, { 'content-type': 'audio/mpeg' }));
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(
    req.method === 'HEAD'
      ? undefined
      : `<html><head><title>Bench clip</title>
    <meta property="og:video" content="https://cdn.example/clip-720.mp4"><meta property="og:video:type" content='video/mp4; codecs="avc1.64001f, mp4a.40.2"'>
    <meta property="og:video:height" content="720"><meta property="video:duration" content="95"><meta property="og:image" content="https://cdn.example/c.jpg"></head></html>`,
  );
});
await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
const pagePort = (page.address() as AddressInfo).port;

const dataDir = mkdtempSync(join(tmpdir(), 'mediagate-bench-'));
// Long media: an hour of synthetic speech-like sound with pauses, transcribed through an
// OpenAI-compatible server that works in proportion to the audio it gets.
const longMedia = await makeLongMedia(dataDir, LONG_MEDIA_MINUTES);
const whisper = await startOpenAiLikeServer(MS_PER_AUDIO_SECOND);
const config = loadConfig({
  ...process.env,
  NODE_ENV: 'production',
  API_KEY_PEPPER: 'bench-pepper-0123456789abcdef0123456789',
  MEDIAGATE_DATA_DIR: dataDir,
  FETCH_ALLOW_HOSTS: `127.0.0.1:${pagePort}`,
  LOG_LEVEL: 'silent',
  TRANSCRIBE_PROVIDERS: 'openai',
  OPENAI_BASE_URL: whisper.baseUrl,
  TRANSCRIBE_TIMEOUT_SECONDS: '3600',
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

// Long media, one request at a time: the gateway's wall time against ffmpeg's own extraction of the same file.
const extraction = await timeExtraction(longMedia.path, dataDir);
const longStarted = performance.now();
const long = await fetch(`${base}/api/transcribe`, { method: 'POST', headers: json(richKey), body: JSON.stringify({ mediaUrl: `http://127.0.0.1:${pagePort}/long.mp3` }) });
const longBody = (await long.json()) as { durationSeconds?: number; segments?: unknown[]; credits?: { charged: number } };
const longSeconds = (performance.now() - longStarted) / 1000;
const longRow = {
  scenario: `transcribe ${LONG_MEDIA_MINUTES} min (server ${MS_PER_AUDIO_SECOND} ms per audio second)`,
  status: long.status,
  'wall s': Math.round(longSeconds * 100) / 100,
  'ffmpeg extraction s': Math.round(extraction * 100) / 100,
  'wall ÷ extraction': Math.round((longSeconds / extraction) * 100) / 100,
  pieces: whisper.uploads.length,
  'longest upload s': Math.round(Math.max(...whisper.uploads)),
  charged: longBody.credits?.charged ?? 0,
};

// Correctness under load: every success charged exactly once, nothing left held, the ledger sums.
const count = await db.orm.em
  .fork()
  .getConnection()
  .execute<{ n: string }[]>(`select count(*) as n from job where account_id = ? and status = 'SUCCEEDED' and operation = 'PARSE'`, [rich.id]);
const charged = Number(count[0].n);
const balance = await services.ledger.balance(rich.id);
// Per started minute of the probed length (an encoded hour runs a few milliseconds over).
const longCharged = long.ok ? Math.max(1, Math.ceil((longBody.durationSeconds ?? 0) / 60)) * config.prices.transcribePerMinute : 0;
const ledgerOk = long.ok && balance.held === 0 && balance.available === initial - charged * config.prices.parse - longCharged && longBody.credits?.charged === longCharged;

console.log(`mediagate bench: ${connections} connections, ${seconds} s per scenario, database: ${db.embedded ? 'embedded PGlite' : 'PostgreSQL'}`);
console.table(rows);
console.table([longRow]);
console.log(`ledger: ${charged} parses and ${longCharged} credits of transcription charged, available ${balance.available}, held ${balance.held}: ${ledgerOk ? 'exact' : 'MISMATCH'}`);

await app.close();
await services.close();
await db.close();
await benchDb?.drop();
page.close();
await whisper.close();
rmSync(dataDir, { recursive: true, force: true });
process.exit(ledgerOk ? 0 : 1);

/** Sound with a pause every few seconds, like speech, as 64 kbit/s MP3. */
async function makeLongMedia(dir: string, minutes: number): Promise<{ path: string }> {
  const path = join(dir, 'long.mp3');
  const tone = "aevalsrc='0.4*sin(2*PI*220*t)*sin(2*PI*3*t)*lt(mod(t\\,9.3)\\,8)':s=22050:d=" + minutes * 60;
  await runTool(process.env.FFMPEG_PATH ?? 'ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', tone, '-ac', '1', '-c:a', 'libmp3lame', '-b:a', '64k', path], {}, 10 * 60_000);
  return { path };
}

/** Seconds ffmpeg alone takes to extract the audio the way the gateway prepares it. */
async function timeExtraction(source: string, dir: string): Promise<number> {
  const started = performance.now();
  await extractAudio(source, join(dir, 'extracted.mp3'), { ffmpegPath: config.ffmpegPath });
  return (performance.now() - started) / 1000;
}

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
