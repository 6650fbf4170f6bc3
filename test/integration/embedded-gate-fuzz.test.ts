import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pg from 'pg';
import { findRunningEmbedded } from '../../src/db/embedded.js';
import { readyEntry } from '../support/cli-process.js';
import {
  CLIENT_FIRST,
  CLIENT_NONCE,
  PROTOCOL_3,
  Peer,
  type Reply,
  VALID_STARTUP,
  conversations,
  converse,
  errorFields,
  refusalProblems,
  saslInitial,
  saslResponseText,
  startupPacket,
} from '../support/gate-fuzz.js';

/**
 * The embedded database's password gate (src/db/embedded-auth.ts) under hostile bytes, on the port
 * a real `mediagate serve` opens: random bytes, broken startup packets, negotiation and cancel
 * codes, broken SCRAM messages, huge declared lengths (fast-check, fixed seed). Whatever comes in,
 * the gate answers at most a FATAL ErrorResponse, never lets the client in, and the process goes on
 * serving: a real client still authenticates and queries, and the app still answers HTTP. The hostile
 * clients live in test/support/gate-fuzz.ts (bench/gate-compare.ts runs them against pg-gateway too).
 */
const SEED = 21_2026;
const NODE = join(process.cwd(), 'node_modules/.bin/node');
const CLI = join(process.cwd(), 'dist/cli/main.js');

/** A running `mediagate serve` on its own embedded database. */
interface Serve {
  child: ChildProcess;
  url: string;
  output(): string;
  exited: boolean;
}

async function startServe(dataDir: string): Promise<Serve> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    API_KEY_PEPPER: 'gate-fuzz-pepper-0123456789abcdef0123',
    HOST: '127.0.0.1',
    PORT: '0',
    MEDIAGATE_DATA_DIR: dataDir,
    DATABASE_URL: '',
  };
  const child = spawn(NODE, [CLI, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const serve: Serve = { child, url: '', output: () => output, exited: false };
  child.once('exit', () => (serve.exited = true));
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const ready = await readyEntry(
    child,
    (entry) => entry.msg === 'mediagate is listening',
    'mediagate serve',
    () => output,
  );
  serve.url = ready.url!;
  return serve;
}

describe('the embedded database gate survives hostile bytes (a real mediagate serve)', () => {
  let dataDir: string;
  let serve: Serve;
  let dbUrl: string;
  let port: number;
  const seen = new Map<string, number>();
  /** A client that sends part of a startup packet and nothing more, opened first so that its wait runs beside the other tests. */
  let lingering: { peer: Peer; since: number; answer: ReturnType<Peer['next']> };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mediagate-gate-fuzz-'));
    serve = await startServe(dataDir);
    dbUrl = findRunningEmbedded(dataDir)!;
    port = Number(new URL(dbUrl).port);
    const peer = await Peer.open(port);
    peer.send(VALID_STARTUP.subarray(0, 6));
    lingering = { peer, since: Date.now(), answer: peer.next() };
  }, 60_000);
  afterAll(async () => {
    if (!serve.exited) {
      const gone = new Promise((r) => serve.child.once('exit', r));
      serve.child.kill('SIGTERM');
      await gone;
    }
    rmSync(dataDir, { recursive: true, force: true });
    console.log(`gate answers seen: ${JSON.stringify(Object.fromEntries(seen))}`);
  });

  /** The process is alive, a real client authenticates and queries through the gate, and the app answers HTTP. */
  async function stillServes(): Promise<void> {
    if (serve.exited) throw new Error(`mediagate serve died:\n${serve.output().slice(-3000)}`);
    const client = new pg.Client({ connectionString: dbUrl });
    try {
      await client.connect().catch((err: Error) => {
        throw new Error(
          `a client with the password cannot get in (${err.message}); the server's last words:\n${serve.output().slice(-2000)}`,
        );
      });
      expect((await client.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await client.end().catch(() => undefined);
    }
    const res = await fetch(`${serve.url}/readyz`);
    expect(res.status).toBe(200);
  }

  /** What the gate may say to a client that is not let in: requests for a password, 'N', and one FATAL error last. */
  function checkRefusal(reply: Reply): void {
    expect(refusalProblems(reply, { codes: seen })).toEqual([]);
  }

  it('serves before anything hostile', async () => {
    await stillServes();
  });

  it('lives through the startup packet that used to kill it: a user key with no value, then a wrong password', async () => {
    const reply = await converse(port, [
      { send: startupPacket('user') },
      { await: true },
      { send: saslInitial('SCRAM-SHA-256', CLIENT_FIRST) },
      { await: true },
      { final: (nonce) => saslResponseText(`c=biws,r=${nonce},p=${Buffer.alloc(32, 7).toString('base64')}`) },
    ]);
    await stillServes();
    expect(reply.messages.map((m) => m.type)).toEqual(['E']);
    expect(errorFields(reply.messages[0].body)).toMatchObject({
      S: 'FATAL',
      C: '08P01',
      M: 'invalid startup packet layout: expected terminator as last byte',
    });
  });

  it('answers broken SCRAM messages with 08P01 and a wrong proof with 28P01, naming the user', async () => {
    const withFinal = (text: (nonce: string) => string) =>
      converse(port, [
        { send: VALID_STARTUP },
        { await: true },
        { send: saslInitial('SCRAM-SHA-256', CLIENT_FIRST) },
        { await: true },
        { final: (n) => saslResponseText(text(n)) },
      ]);
    const codeOf = (reply: Reply) => errorFields(reply.messages.at(-1)!.body);
    const proof = Buffer.alloc(32, 1).toString('base64');
    expect(codeOf(await withFinal((n) => `c=biws,r=${n},p=${proof}`))).toMatchObject({
      C: '28P01',
      M: 'password authentication failed for user "postgres"',
    });
    expect(codeOf(await withFinal((n) => `c=biws,r=${n},p=not base64`))).toMatchObject({ C: '08P01', M: 'malformed SCRAM message' });
    expect(codeOf(await withFinal(() => `c=biws,p=${proof}`))).toMatchObject({ C: '08P01' });
    expect(codeOf(await withFinal(() => `c=biws,r=${CLIENT_NONCE},p=${proof}`))).toMatchObject({ C: '08P01', M: 'SCRAM nonce mismatch' });
    expect(codeOf(await withFinal((n) => `c=eSws,r=${n},p=${proof}`))).toMatchObject({
      C: '08P01',
      M: 'SCRAM channel binding check failed',
    });
    const lying = await converse(port, [{ send: VALID_STARTUP }, { await: true }, { send: saslInitial('SCRAM-SHA-256', CLIENT_FIRST, 3) }]);
    expect(codeOf(lying)).toMatchObject({ C: '08P01', M: 'malformed SASLInitialResponse message' });
    await stillServes();
  });

  it('refuses a declared length of 2 GiB at once, without waiting for (or keeping) the bytes', async () => {
    const peer = await Peer.open(port);
    peer.send(startupPacket('', PROTOCOL_3, 2 ** 31 - 1));
    // Our side stays open: the answer comes because the gate refuses, not because we stopped.
    const answer = await peer.next();
    expect(answer?.type).toBe('E');
    expect(errorFields(answer!.body)).toMatchObject({ S: 'FATAL', C: '08P01' });
    await peer.finish();
    await stillServes();
  });

  it('never lets a client in without the password, and keeps serving, whatever bytes come', async () => {
    await fc.assert(
      fc.asyncProperty(conversations(), async (actions) => {
        checkRefusal(await converse(port, actions));
        await stillServes();
      }),
      { seed: SEED, numRuns: 300 },
    );
  }, 300_000);

  it('closes a connection that does not authenticate in time, with PostgreSQL’s words', async () => {
    const answer = await lingering.answer;
    expect(Date.now() - lingering.since).toBeGreaterThanOrEqual(9_000);
    expect(errorFields(answer!.body)).toMatchObject({ S: 'FATAL', C: '08P01', M: 'canceling authentication due to timeout' });
    await lingering.peer.finish();
    await stillServes();
  }, 30_000);
});
