import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { findRunningEmbedded } from '../src/db/embedded.js';
import { copyPipelineSchema, createScratchDatabase, ledgerProblems, seedAccounts, settledTotals, type BenchKeys } from './bench-data.js';
import { benchAcrossGateways, PARSE_SCENARIOS } from './gateways.js';
import { runLoad, watchProcess, type LoadResult } from './load.js';
import { makeOrdinaryMedia } from './bench-media.js';
import { makeLongMedia, runLongMedia, type LongMediaRow } from './long-media.js';
import { makeStreamMedia, runStreams } from './streams.js';
import { startOpenAiLikeServer } from './openai-like.server.js';
import { BENCH_PEPPER, forkServer, gatewayEnvironment, startGateway, tuningOf, type BenchProcess } from './processes.js';
import type { ProfileWindow } from './cpu-profile.js';
import { countsSince, cpuProfileFlags, printProfile, readProfile, statementCounts, statementsPerAnswer, sumCounts } from './profiling.js';
import { markdownTable, measured, round2, SCENARIOS, targets, writeResults, type Contender, type Row, type Scenario } from './scenarios.js';

/** One scenario's turn: its load, when it ran, and what the answering process and the ledger showed. */
interface Slice {
  load: LoadResult;
  window: ProfileWindow;
  rssMb: number;
  cpuMs: number;
  /** The gateway's statements by shape during the turn (with --profile). */
  statements: Map<string, number>;
  problems: string[];
}

/**
 * `npm run bench`: the gateway against two references measured in the same run, each in its own
 * process beside a page server of its own: (a) a bare proxy that only fetches the page, (b) the
 * obvious parse pipeline in raw `pg` on its own copy of the tables. See the README's Benchmark
 * section for what the columns mean.
 */
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: process.env.BENCH_SECONDS ?? '10' },
    rounds: { type: 'string', default: process.env.BENCH_ROUNDS ?? '3' },
    connections: { type: 'string', default: process.env.BENCH_CONNECTIONS ?? '10,50' },
    warmup: { type: 'string', default: '3' },
    accounts: { type: 'string', default: '1000' },
    pool: { type: 'string' },
    only: { type: 'string' },
    json: { type: 'string', default: 'bench-results.json' },
    profile: { type: 'boolean', default: false },
    'node-flags': { type: 'string', default: '' },
    'long-media': { type: 'boolean', default: false },
    streams: { type: 'boolean', default: true },
    gateways: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
  // --no-streams
  allowNegative: true,
});
if (args.help) {
  console.log(`npm run bench -- [options]
  --duration S        seconds per scenario (default 10, or BENCH_SECONDS)
  --rounds N          the scenarios take turns N times, each running duration/N seconds a turn (default 3, or BENCH_ROUNDS)
  --connections LIST  comma-separated connection counts (default 10,50, or BENCH_CONNECTIONS)
  --warmup S          seconds of unmeasured load per server before the first scenario (default 3)
  --accounts N        accounts the spread scenarios spread over (default 1000)
  --pool N            the reference's pool size (default: the gateway's: DATABASE_POOL_SIZE, else 10, 1 embedded)
  --only IDS          comma-separated scenarios: ${SCENARIOS.map((s) => s.id).join(', ')}
  --json FILE         where the results go (default bench-results.json)
  --profile           run the gateway and the reference under --cpu-prof and print where REST and GraphQL parse
                      spread, REST on ordinary pages and the reference's spread spend their time; count the
                      gateway's statements
  --node-flags FLAGS  extra Node flags for the gateway, space-separated (--node-flags="--trace-gc"); its
                      output is kept as bench-gateway.log
  --long-media        add one long transcription (BENCH_LONG_MEDIA_MINUTES, default 60; slow)
  --no-streams        leave out the streams: a video fetched plainly and through the gateway's stream URL
                      (passed through, muted, as audio), one and four at once (BENCH_STREAM_SECONDS, default 60)
  --gateways N        instead: the parse scenarios (default ${PARSE_SCENARIOS.join(', ')}; --only picks) through 1, 2, ... N
                      gateways on one PostgreSQL database (DATABASE_URL required), the load's connections spread
                      round robin over them, the ledger checked after each; prints throughput for each N
DATABASE_URL set: a scratch PostgreSQL database, dropped at the end; unset: the embedded PGlite.`);
  process.exit(0);
}
const seconds = Number(args.duration);
const rounds = Number(args.rounds);
const levels = args.connections.split(',').map(Number);
const only = args.only ? new Set(args.only.split(',')) : null;
const scenarios = SCENARIOS.filter((s) => !only || only.has(s.id));
const unknown = [...(only ?? [])].filter((id) => !SCENARIOS.some((s) => s.id === id));
if (unknown.length || !scenarios.length || !(seconds > 0) || !Number.isInteger(rounds) || rounds < 1 || levels.some((c) => !(c > 0))) {
  console.error(
    `bad options: ${unknown.length ? `unknown scenario(s) ${unknown.join(', ')}` : 'durations and connections must be positive, rounds a whole number'}`,
  );
  process.exit(2);
}
const running = (c: Contender) => scenarios.some((s) => s.contender === c);

if (args.gateways !== undefined) {
  const gateways = Number(args.gateways);
  const chosen = only ? scenarios : SCENARIOS.filter((s) => PARSE_SCENARIOS.includes(s.id));
  const problem =
    !Number.isInteger(gateways) || gateways < 1
      ? '--gateways must be a whole number from 1'
      : !process.env.DATABASE_URL
        ? '--gateways needs DATABASE_URL (PostgreSQL: the embedded database serves one process)'
        : args.profile || args['long-media']
          ? '--gateways runs without --profile and --long-media'
          : chosen.some((s) => s.contender !== 'gateway')
            ? '--gateways runs only the gateway’s scenarios'
            : levels.some((c) => c < gateways)
              ? 'each connection count must be at least --gateways'
              : null;
  if (problem) {
    console.error(`bad options: ${problem}`);
    process.exit(2);
  }
  const options = {
    seconds,
    rounds,
    levels,
    warmup: Number(args.warmup),
    accounts: Number(args.accounts),
    json: args.json,
    nodeFlags: args['node-flags'].split(' ').filter(Boolean),
  };
  process.exit(await benchAcrossGateways(gateways, chosen, process.env.DATABASE_URL!, options));
}

const work = mkdtempSync(join(tmpdir(), 'mediagate-bench-'));
const longMinutes = Number(process.env.BENCH_LONG_MEDIA_MINUTES ?? 60);
const msPerAudioSecond = Number(process.env.BENCH_WHISPER_MS_PER_AUDIO_SECOND ?? 5);
const longFile = args['long-media'] ? await makeLongMedia(work, longMinutes, process.env.FFMPEG_PATH ?? 'ffmpeg') : undefined;
const whisper = args['long-media'] ? await startOpenAiLikeServer(msPerAudioSecond) : null;
const streamFile =
  args.streams && !args.only
    ? await makeStreamMedia(work, Number(process.env.BENCH_STREAM_SECONDS ?? 60), process.env.FFMPEG_PATH ?? 'ffmpeg')
    : undefined;
const scratch = process.env.DATABASE_URL ? await createScratchDatabase(process.env.DATABASE_URL) : null;
// As the gateway sizes its pool: DATABASE_POOL_SIZE when set, else 10, or 1 on the embedded database.
const poolSize = Number(args.pool ?? process.env.DATABASE_POOL_SIZE ?? (scratch ? 10 : 1));
const processes: BenchProcess[] = [];
let exitCode = 0;

try {
  const mediaDir = scenarios.some((s) => s.ordinary) ? await makeOrdinaryMedia(work, process.env.FFMPEG_PATH ?? 'ffmpeg') : undefined;
  const page = await forkServer('./page.server.js', {
    ...process.env,
    BENCH_LONG_MEDIA_FILE: longFile,
    BENCH_MEDIA_DIR: mediaDir,
    BENCH_STREAM_FILE: streamFile,
  });
  processes.push(page);
  const pepper = BENCH_PEPPER;
  const gatewayEnv = gatewayEnvironment({
    work,
    pageUrl: page.url,
    databaseUrl: scratch?.url,
    extra: whisper ? { TRANSCRIBE_PROVIDERS: 'openai', OPENAI_BASE_URL: whisper.baseUrl, TRANSCRIBE_TIMEOUT_SECONDS: '3600' } : {},
  });
  const config = loadConfig(gatewayEnv);
  const profileDir = join(work, 'profile');
  const statementFile = join(work, 'statements.json');
  const gateway = await startGateway(
    { ...gatewayEnv, BENCH_STATEMENT_COUNT_FILE: args.profile ? statementFile : undefined },
    join(work, 'gateway.log'),
    [
      ...args['node-flags'].split(' ').filter(Boolean),
      ...(args.profile
        ? [...cpuProfileFlags(join(profileDir, 'gateway')), `--import=${new URL('./statement-count.preload.js', import.meta.url).href}`]
        : []),
    ],
  );
  processes.push(gateway);

  // The gateway has migrated its database; the embedded one is reached through the gateway's socket.
  const databaseUrl = scratch?.url ?? findRunningEmbedded(config.dataDir);
  if (!databaseUrl) throw new Error('the gateway announced no embedded database');
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const accounts = Number(args.accounts);
  const credits = { hot: 1_000_000_000, each: 1_000_000 };
  const triggers = await copyPipelineSchema(db, 'bench_ref');
  const keys: Record<'gateway' | 'reference', BenchKeys> = {
    gateway: await seedAccounts(db, 'public', accounts, pepper, credits),
    reference: await seedAccounts(db, 'bench_ref', accounts, pepper, credits),
  };
  const servers: Partial<Record<Contender, BenchProcess>> = { gateway };
  if (running('proxy')) processes.push((servers.proxy = await forkServer('./proxy.server.js', process.env)));
  if (running('reference')) {
    const env = {
      ...process.env,
      BENCH_DATABASE_URL: databaseUrl,
      BENCH_POOL_SIZE: String(poolSize),
      BENCH_SCHEMA: 'bench_ref',
      API_KEY_PEPPER: pepper,
      BENCH_PRICE: String(config.prices.parse),
    };
    processes.push(
      (servers.reference = await forkServer(
        './reference.server.js',
        env,
        args.profile ? cpuProfileFlags(join(profileDir, 'reference')) : [],
      )),
    );
  }
  const database = scratch
    ? 'PostgreSQL (scratch database)'
    : 'embedded PGlite (inside the gateway process; its RSS includes the database)';
  console.log(
    `mediagate bench: ${seconds} s per scenario in ${rounds} turn${rounds > 1 ? 's' : ''} at ${levels.join(' and ')} connections, ${accounts} spread accounts, pool ${poolSize}, ${database}; the gateway with ${tuningOf(gatewayEnv)}`,
  );
  if (triggers.length) console.log(`the gateway's tables have triggers the reference's copy has not: ${triggers.join(', ')}`);

  const pageUrl = `${page.url}/watch`;
  const keysFor = (s: Scenario) => {
    const k = keys[s.contender === 'gateway' ? 'gateway' : 'reference'];
    return s.keys === 'hot' ? [k.hot] : s.keys === 'spread' ? k.spread : ['none'];
  };
  // Ordinary pages are numbered over the whole run, so no page (nor its media) is ever asked for twice.
  let ordinaryPages = 0;
  const runScenario = (s: Scenario, connections: number, secs: number) =>
    runLoad({
      url: servers[s.contender]!.url + s.path,
      body: s.body(pageUrl),
      bodyFor: s.ordinary ? () => s.body(`${page.url}/ordinary/${ordinaryPages++}`) : undefined,
      keys: keysFor(s),
      connections,
      seconds: secs,
      isOk: s.isOk,
      isComplete: s.isComplete,
    });

  // JIT and pools warm before anything counts.
  for (const contender of ['proxy', 'reference', 'gateway'] as const) {
    const first = scenarios.find((s) => s.contender === contender);
    if (first && Number(args.warmup) > 0) await runScenario(first, Math.min(...levels), Number(args.warmup));
  }

  const rows: Row[] = [];
  const top = Math.max(...levels);
  // Where each contender's profile is read: its spread parse at the most connections, every round.
  const windows = new Map<string, ProfileWindow[]>();
  for (const connections of levels) {
    // The scenarios take turns, `rounds` times, each for its share of the duration: whatever the
    // machine does meanwhile (another tenant, a checkpoint) falls on all of them alike, so their
    // ratios hold from run to run far better than with one stretch each.
    const slices = new Map<string, Slice[]>(scenarios.map((s) => [s.id, []]));
    for (let round = 0; round < rounds; round++) {
      for (const s of scenarios) slices.get(s.id)!.push(await measure(s, connections, seconds / rounds));
    }
    for (const s of scenarios) {
      const parts = slices.get(s.id)!;
      const { load: r, figures } = measured(parts);
      if (connections === top)
        windows.set(
          s.id,
          parts.map((p) => p.window),
        );
      const problems = figures.ledgerProblems;
      const statements =
        args.profile && s.contender === 'gateway' ? statementsPerAnswer(sumCounts(parts.map((p) => p.statements)), r.ok) : undefined;
      const ref = s.reference ? rows.find((x) => x.scenario === s.reference && x.connections === connections) : undefined;
      const proxy = rows.find((x) => x.scenario === 'proxy' && x.connections === connections);
      const row: Row = {
        scenario: s.id,
        label: s.label,
        connections,
        ...figures,
        ...(s.isComplete && { incomplete: r.incomplete }),
        vsReference: ref?.reqPerSec ? round2(r.reqPerSec / ref.reqPerSec) : null,
        vsProxy: s.contender === 'gateway' && s.charges && proxy?.reqPerSec ? round2(r.reqPerSec / proxy.reqPerSec) : null,
        ledger: s.contender === 'proxy' ? null : problems.length ? 'FAIL' : 'PASS',
        statements,
      };
      rows.push(row);
      if (problems.length) exitCode = 1;
      const lacking = row.incomplete ? `, ${row.incomplete} of them without the media's size or length` : '';
      console.log(
        `  ${connections} conns, ${s.id}: ${row.reqPerSec} req/s, p99 ${row.p99} ms, ${row.ok} ok${lacking}, ${row.failed} failed${problems.length ? `, LEDGER: ${problems.join('; ')}` : ''}`,
      );
    }
  }

  /** One stretch of one scenario, with the ledger checked to the credit after it. */
  async function measure(s: Scenario, connections: number, secs: number): Promise<Slice> {
    const schema = s.contender === 'gateway' ? 'public' : 'bench_ref';
    // The last stretch's rows vacuumed and analysed now, not by autovacuum in the middle of this
    // one: on two cores, a background vacuum of ten thousand fresh jobs costs the next scenario
    // a fifth of its throughput, whichever contender it measures.
    if (s.contender !== 'proxy') await db.query('vacuum (analyze)');
    const before = s.contender === 'proxy' ? null : await settledTotals(db, schema);
    const counting = args.profile && s.contender === 'gateway';
    const countsBefore = counting ? await statementCounts(gateway.pid, statementFile) : null;
    const usage = watchProcess(servers[s.contender]!.pid);
    const from = Number(process.hrtime.bigint() / 1000n);
    const load = await runScenario(s, connections, secs);
    const window = { from, to: Number(process.hrtime.bigint() / 1000n) };
    const { rssMb, cpuMs } = usage.stop();
    const statements = countsBefore
      ? countsSince(countsBefore, await statementCounts(gateway.pid, statementFile))
      : new Map<string, number>();
    const problems = before ? ledgerProblems(before, await settledTotals(db, schema), s.charges ? load.ok : 0, config.prices.parse) : [];
    return { load, window, rssMb, cpuMs, statements, problems };
  }

  const dash = (v: number | null) => (v === null ? '—' : String(v));
  console.log(
    '\n' +
      markdownTable(
        ['scenario', 'conns', 'req/s', 'p50 ms', 'p99 ms', 'ok', 'failed', 'RSS MB', 'CPU ms/ok', '÷ ref', '÷ proxy', 'ledger'],
        rows.map((r) => [
          r.label,
          r.connections,
          r.reqPerSec,
          r.p50,
          r.p99,
          r.ok,
          r.failed,
          r.rssMb,
          r.cpuMsPerAnswer,
          dash(r.vsReference),
          dash(r.vsProxy),
          r.ledger ?? '—',
        ]),
      ),
  );
  const goals = targets(rows, { embedded: !scratch });
  console.log(
    '\n' +
      markdownTable(
        ['target', 'value', 'floor', 'met'],
        goals.map((t) => [t.name, dash(t.value), t.floor, t.met === null ? '—' : t.met ? 'yes' : 'NO']),
      ),
  );

  let streams: Awaited<ReturnType<typeof runStreams>> | null = null;
  if (streamFile) {
    streams = await runStreams({
      gateway: gateway.url,
      gatewayPid: gateway.pid,
      key: keys.gateway.hot,
      pageUrl: `${page.url}/stream`,
      fileUrl: `${page.url}/stream.mp4`,
      sourceBytes: statSync(streamFile).size,
      parallel: 4,
    });
    console.log(
      `\n${markdownTable(
        Object.keys(streams[0]),
        streams.map((r) => Object.values(r)),
      )}`,
    );
    if (streams.some((r) => r.status !== 'ok')) exitCode = 1;
  }

  let longMedia: LongMediaRow | null = null;
  if (whisper && longFile) {
    const before = await settledTotals(db, 'public');
    longMedia = await runLongMedia({
      gateway: gateway.url,
      key: keys.gateway.hot,
      mediaUrl: `${page.url}/long.mp3`,
      file: longFile,
      dir: work,
      ffmpegPath: config.ffmpegPath,
      minutes: longMinutes,
      msPerAudioSecond,
      uploads: whisper.uploads,
      pricePerMinute: config.prices.transcribePerMinute,
    });
    const after = await settledTotals(db, 'public');
    const exact =
      longMedia.status === 200 &&
      longMedia.charged === longMedia.expected &&
      before.available - after.available === longMedia.expected &&
      after.held === 0 &&
      after.unbalanced === 0;
    console.log('');
    console.table([longMedia]);
    console.log(`long media ledger: ${exact ? 'PASS' : 'FAIL'}`);
    if (!exact) exitCode = 1;
  }
  await db.end();

  const profiles: Record<string, unknown> = {};
  if (args.profile) {
    console.log(
      '\n' +
        markdownTable(
          ['gateway statements per answer (through the ORM’s pg)', 'per answer', 'statement'],
          rows.flatMap((r) =>
            Object.entries(r.statements?.shapes ?? {}).map(([shape, n], i) => [
              i ? '' : `${r.label}, ${r.connections} conns: ${r.statements!.total}`,
              n,
              shape,
            ]),
          ),
        ),
    );
    // The gateway's one profile is read once per parse scenario that ran: REST and GraphQL spread, ordinary pages.
    const reads = [
      ['gateway', 'rest-spread', 'gateway'],
      ['gateway', 'graphql-spread', 'gateway'],
      ['gateway', 'rest-ordinary', 'gateway'],
      ['reference', 'ref-spread', 'reference (b)'],
    ] as const;
    for (const [contender, id, title] of reads) {
      if (!servers[contender] || !windows.has(id)) continue;
      await servers[contender].stop(); // the profile is written as the process exits
      const profile = readProfile(join(profileDir, contender), windows.get(id) ?? null);
      if (!profile) {
        console.log(`\nno CPU profile from the ${title}`);
        continue;
      }
      const file = resolve(`bench-${contender}.cpuprofile`);
      copyFileSync(profile.file, file);
      profiles[contender === 'gateway' ? id : contender] = { ...profile, file };
      printProfile(`${title} CPU profile, ${id} at ${top} connections (${file})`, profile);
    }
  }

  writeResults(
    args.json,
    { database, seconds, rounds, levels, accounts, poolSize, triggers, rows, targets: goals, streams, longMedia, profiles },
    exitCode !== 0,
  );
} catch (err) {
  console.error(err);
  exitCode = 1;
} finally {
  for (const p of processes.reverse()) await p.stop();
  // What went wrong inside the gateway, before its log goes with the scratch directory.
  if (exitCode && existsSync(join(work, 'gateway.log')))
    console.error(`gateway log (end):\n${readFileSync(join(work, 'gateway.log'), 'utf8').slice(-4000)}`);
  // With flags of one's own (--trace-gc, ...) the gateway's output is what one came for.
  if (args['node-flags'] && existsSync(join(work, 'gateway.log'))) copyFileSync(join(work, 'gateway.log'), 'bench-gateway.log');
  await whisper?.close();
  await scratch?.drop();
  rmSync(work, { recursive: true, force: true });
}
process.exit(exitCode);
