import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pg from 'pg';
import { startEmbedded } from '../src/db/embedded.js';
import {
  type Action,
  CANCEL_REQUEST,
  GSSENC_REQUEST,
  PROTOCOL_3,
  Peer,
  SSL_REQUEST,
  VALID_STARTUP,
  conversations,
  converse,
  errorFields,
  type BackendMessage,
  refusalProblems,
  startupPacket,
  typed,
} from '../test/support/gate-fuzz.js';
import { type GateKind, type RunningGate, memoryOf, startGate } from './gate-servers.js';

/**
 * Our embedded database's password gate against pg-gateway's, on the same hostile clients as
 * test/integration/embedded-gate-fuzz.test.ts plus what a fuzz run cannot show (memory on huge
 * declared lengths, slowloris, many idle connections, timing). Not run by CI; see docs/architecture.md.
 *
 *   npx tsc -p bench/tsconfig.json && node dist-bench/bench/gate-compare.js [--runs 300] [--scratch DIR] [--only KIND]
 *
 * pg-gateway (and the product's PGlite version) are installed with npm into the scratch directory.
 */
const SEED = 21_2026;
const MiB = 2 ** 20;

const arg = (name: string) => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
};
const send = (bytes: Buffer): Action => ({ send: bytes });
const wait: Action = { await: true };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x: number) => Math.round(x * 100) / 100;

/** A client with (or without) the password: its time to get in, or its refusal. */
async function login(gate: RunningGate, options: { user?: string; password?: string } = {}): Promise<{ ms: number; error?: string }> {
  const client = new pg.Client({
    host: gate.host,
    port: gate.port,
    user: options.user ?? 'postgres',
    password: options.password ?? gate.password,
    database: 'postgres',
    connectionTimeoutMillis: 5000,
  });
  const started = performance.now();
  try {
    await client.connect();
    await client.query('select 1');
    return { ms: performance.now() - started };
  } catch (err) {
    const e = err as { code?: string; message: string };
    return { ms: performance.now() - started, error: `${e.code ?? ''} ${e.message}`.trim() };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The fuzz test's conversations (same seed), each given 5 s; a real login checked every 10. */
async function fuzz(gate: RunningGate, runs: number) {
  const samples = fc.sample(conversations(), { seed: SEED, numRuns: runs });
  const problems = new Map<string, number>();
  let hung = 0;
  let noAnswer = 0;
  let letIn = 0;
  let loginFailures = 0;
  const stderrBefore = gate.stderrBytes();
  for (const [i, actions] of samples.entries()) {
    if (gate.exited()) break;
    const reply = await converse(gate.port, actions, gate.host, 5000).catch(() => null);
    if (!reply) continue;
    if (reply.hung) hung++;
    if (!reply.messages.length && !reply.hung) noAnswer++;
    if (reply.messages.some((m) => (m.type === 'R' && [0, 12].includes(m.body.readInt32BE(0))) || m.type === 'Z')) letIn++;
    for (const p of refusalProblems(reply, { requests: gate.requests })) {
      const kind = p.replace(/\(.*\)/, '').trim();
      problems.set(kind, (problems.get(kind) ?? 0) + 1);
    }
    if (i % 10 === 9 && (await login(gate)).error) loginFailures++;
  }
  return {
    runs: samples.length,
    survived: !gate.exited(),
    letIn,
    hung,
    noAnswerBeforeHangUp: noAnswer,
    problems: Object.fromEntries(problems),
    loginFailures,
    stderrKiB: round((gate.stderrBytes() - stderrBefore) / 1024),
  };
}

/** Writes `total` bytes to the gate in 1 MiB chunks, honouring back-pressure, until sent or closed. */
async function stream(peer: Peer, total: number): Promise<number> {
  const chunk = Buffer.alloc(MiB, 0x61);
  let sent = 0;
  while (sent < total && !peer.isClosed) {
    await peer.sendAndDrain(chunk);
    sent += MiB;
  }
  return sent;
}

/** A huge declared length, then up to `total` bytes of body, on a fresh gate: how much it takes before refusing, and its memory. */
async function huge(kind: GateKind, scratch: string, header: Action[], total: number) {
  const gate = await startGate(kind, scratch, process.argv[1]);
  try {
    const pid = gate.child.pid!;
    const before = memoryOf(pid).rss;
    let highest = before;
    const sampler = setInterval(() => (highest = Math.max(highest, memoryOf(pid).rss)), 50);
    const peer = await Peer.open(gate.port, gate.host);
    for (const action of header)
      if ('send' in action) peer.send(action.send);
      else await peer.next();
    const started = performance.now();
    let refusedAt: number | null = null;
    let answer = '';
    const watch = (async () => {
      const m = await peer.next();
      refusedAt = performance.now() - started;
      answer = m ? describe(m) : 'closed without a word';
    })();
    const sent = await stream(peer, total);
    await Promise.race([watch, sleep(3000)]);
    clearInterval(sampler);
    peer.destroy();
    return {
      answer: answer || 'none (still open)',
      refusedMs: refusedAt === null ? null : Math.round(refusedAt),
      MiBSent: Math.round(sent / MiB),
      rssGrowthMiB: Math.max(highest, memoryOf(pid).rss) - before,
    };
  } finally {
    gate.child.kill('SIGKILL');
  }
}

const describe = (m: BackendMessage) => {
  if (m.type === 'E') {
    const f = errorFields(m.body);
    return `E ${f.S} ${f.C} ${f.M}`;
  }
  return m.type === 'R' ? `R ${m.body.readInt32BE(0)}` : m.type;
};

/** What the gate says to a conversation within `ms`, our side left open: its messages, then whether it closed. */
async function answerTo(gate: RunningGate, actions: Action[], ms = 3000): Promise<string> {
  const peer = await Peer.open(gate.port, gate.host);
  const out: string[] = [];
  const talk = async () => {
    for (const action of actions) {
      if ('send' in action) peer.send(action.send);
      else if ('await' in action) {
        const m = await peer.next();
        if (m) out.push(describe(m));
      }
    }
    for (let m = await peer.next(); m; m = await peer.next()) out.push(describe(m));
  };
  await Promise.race([talk(), sleep(ms)]);
  out.push(peer.isClosed ? 'closed by the gate' : `still open after ${ms / 1000} s`);
  peer.destroy();
  return out.join(' | ');
}

/** Slowloris: the startup packet a byte every 500 ms; and 1,000 connections that send half a header and wait. */
async function slow(gate: RunningGate) {
  const trickle = await Peer.open(gate.port, gate.host);
  const started = Date.now();
  const bytes = Buffer.concat([VALID_STARTUP, VALID_STARTUP]);
  for (let i = 0; i < bytes.length && !trickle.isClosed && Date.now() - started < 15_000; i++) {
    trickle.send(bytes.subarray(i, i + 1));
    await sleep(500);
  }
  const trickleClosedAfter = trickle.isClosed ? `${Math.round((Date.now() - started) / 1000)} s` : 'still open after 15 s';
  trickle.destroy();

  const before = memoryOf(gate.child.pid!);
  const idle = await Promise.all(Array.from({ length: 1000 }, () => Peer.open(gate.port, gate.host)));
  for (const p of idle) p.send(VALID_STARTUP.subarray(0, 6));
  await sleep(1000);
  const withIdle = memoryOf(gate.child.pid!);
  const loginMeanwhile = await login(gate);
  await sleep(11_000);
  const open = idle.filter((p) => !p.isClosed).length;
  for (const p of idle) p.destroy();
  return {
    trickleClosedAfter,
    idle1000RssGrowthMiB: withIdle.rss - before.rss,
    loginWith1000IdleMs: loginMeanwhile.error ?? Math.round(loginMeanwhile.ms),
    idleStillOpenAfter12s: open,
  };
}

/** Wrong password for the real user and for an unknown one, and the right password, taken in turn: median times over `n` each. */
async function timing(gate: RunningGate, n: number) {
  const cases = {
    wrongPassword: { password: 'wrong' },
    wrongPasswordUnknownUser: { user: 'nobody_at_all', password: 'wrong' },
    rightPassword: {},
  };
  const ms: Record<string, number[]> = {};
  const errors: Record<string, string> = {};
  for (let i = 0; i < n; i++) {
    for (const [name, options] of Object.entries(cases)) {
      const r = await login(gate, options);
      (ms[name] ??= []).push(r.ms);
      errors[name] = r.error ?? '';
    }
  }
  return Object.fromEntries(Object.keys(cases).map((name) => [name, { medianMs: round(median(ms[name])), error: errors[name] }]));
}

async function compare(kind: GateKind, scratch: string, runs: number) {
  const gate = await startGate(kind, scratch, process.argv[1]);
  try {
    const result = {
      gate: kind,
      idleRssMiB: memoryOf(gate.child.pid!).rss,
      firstLogin: await login(gate),
      fuzz: await fuzz(gate, runs),
      negotiation: {
        ssl: await answerTo(gate, [send(startupPacket('', SSL_REQUEST))]),
        gssenc: await answerTo(gate, [send(startupPacket('', GSSENC_REQUEST))]),
        cancel: await answerTo(gate, [send(startupPacket(Buffer.alloc(8), CANCEL_REQUEST))]),
        zeroLength: await answerTo(gate, [send(startupPacket('', PROTOCOL_3, 0))]),
        sslThenStartupInOnePacket: await answerTo(gate, [send(Buffer.concat([startupPacket('', SSL_REQUEST), VALID_STARTUP]))]),
        queryBeforeAuth: await answerTo(gate, [send(VALID_STARTUP), wait, send(typed('Q', 'select 1\0'))]),
        otherMessageBeforeAuth: await answerTo(gate, [send(VALID_STARTUP), wait, send(typed('S', ''))]),
      },
      startupDeclaring1GiB: await huge(kind, scratch, [send(startupPacket('', PROTOCOL_3, 2 ** 30).subarray(0, 8))], 256 * MiB),
      messageDeclaring2GiB: await huge(
        kind,
        scratch,
        [send(VALID_STARTUP), wait, send(typed('p', '', 2 ** 31 - 1).subarray(0, 5))],
        256 * MiB,
      ),
      slow: await slow(gate),
      timing: await timing(gate, 50),
      lastLogin: await login(gate),
      survived: !gate.exited(),
      rssAtEndMiB: gate.exited() ? null : memoryOf(gate.child.pid!).rss,
    };
    return result;
  } finally {
    gate.child.kill('SIGKILL');
  }
}

if (process.argv.includes('--serve-ours')) {
  // The gate as `mediagate serve` starts it, on an in-memory PGlite: prints its address for the comparison.
  const db = await startEmbedded(null);
  const url = new URL(db.clientUrl);
  console.log(JSON.stringify({ port: Number(url.port), password: decodeURIComponent(url.password) }));
} else {
  const scratch = arg('--scratch') ?? mkdtempSync(join(tmpdir(), 'gate-compare-'));
  const runs = Number(arg('--runs') ?? 300);
  const only = arg('--only') as GateKind | undefined;
  const kinds: GateKind[] = only ? [only] : ['mediagate', 'pg-gateway-0.2.4', 'pg-gateway-0.3.0-beta.4'];
  for (const kind of kinds) console.log(JSON.stringify(await compare(kind, scratch, runs), null, 2));
  process.exit(0);
}
