import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pg from 'pg';
import { findRunningEmbedded } from '../../src/db/embedded.js';
import { readyEntry } from '../support/cli-process.js';

/**
 * The embedded database's password gate (src/db/embedded-auth.ts) under hostile bytes, on the port
 * a real `mediagate serve` opens: random bytes, broken startup packets, negotiation and cancel
 * codes, broken SCRAM messages, huge declared lengths (fast-check, fixed seed). Whatever comes in,
 * the gate answers at most a FATAL ErrorResponse, never lets the client in, and the process goes on
 * serving: a real client still authenticates and queries, and the app still answers HTTP.
 */
const SEED = 21_2026;
const NODE = join(process.cwd(), 'node_modules/.bin/node');
const CLI = join(process.cwd(), 'dist/cli/main.js');

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
const PROTOCOL_3 = 196608;
/** What the gate may answer a refused connection with: PostgreSQL's codes for a broken protocol, a missing or wrong password, an unknown protocol, a timeout. */
const REFUSAL_CODES = new Set(['08P01', '28000', '28P01', '0A000']);

/** A startup message whose parameters are `params` as given (their layout is the test's business). */
function startupPacket(params: Buffer | string, code = PROTOCOL_3, declared?: number): Buffer {
  const body = Buffer.from(params);
  const out = Buffer.alloc(8 + body.length);
  out.writeInt32BE(declared ?? out.length, 0);
  out.writeInt32BE(code, 4);
  body.copy(out, 8);
  return out;
}

const VALID_STARTUP = startupPacket('user\0postgres\0database\0postgres\0\0');

/** A typed frontend message: its byte, a length counting itself (or `declared`), the body. */
function typed(type: string, body: Buffer | string, declared?: number): Buffer {
  const data = Buffer.from(body);
  const out = Buffer.alloc(5 + data.length);
  out.write(type, 0, 'latin1');
  out.writeInt32BE(declared ?? 4 + data.length, 1);
  data.copy(out, 5);
  return out;
}

/** A SASLInitialResponse: mechanism, NUL, the data's length (or `declared`), the data. */
function saslInitial(mechanism: string, data: string, declared?: number): Buffer {
  const d = Buffer.from(data);
  const len = Buffer.alloc(4);
  len.writeInt32BE(declared ?? d.length, 0);
  return typed('p', Buffer.concat([Buffer.from(`${mechanism}\0`), len, d]));
}

const CLIENT_NONCE = 'fyko+d2lbbFgONRv9qkxdawL';
const CLIENT_FIRST = `n,,n=,r=${CLIENT_NONCE}`;

/** One thing the fuzzing client does: send bytes, wait for the gate's next message, or answer its server-first-message. */
type Action = { send: Buffer } | { await: true } | { final: (serverNonce: string) => Buffer };

/** A backend message as read off the wire ('N' alone is the gate's one-byte answer to an encryption request). */
interface BackendMessage {
  type: string;
  body: Buffer;
}

/** A client socket that reads the gate's answers message by message, and every byte until it closes. */
class Peer {
  private buf = Buffer.alloc(0);
  private closed = false;
  private wake: (() => void) | null = null;
  readonly messages: BackendMessage[] = [];
  private read = 0;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.parse();
      this.wake?.();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
  }

  static open(port: number): Promise<Peer> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(new Peer(socket)));
      socket.once('error', reject);
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** What is left unparsed (a torn message means the gate wrote garbage). */
  get leftover(): Buffer {
    return this.buf;
  }

  send(bytes: Buffer): void {
    if (!this.closed && !this.socket.destroyed) this.socket.write(bytes);
  }

  /** The next message, or null once the gate closed without one. */
  async next(): Promise<BackendMessage | null> {
    while (this.read >= this.messages.length && !this.closed) await new Promise<void>((r) => (this.wake = r));
    return this.messages[this.read++] ?? null;
  }

  /** Ends our side and resolves when the gate has closed the connection. */
  async finish(): Promise<void> {
    if (!this.socket.destroyed) this.socket.end();
    while (!this.closed) await new Promise<void>((r) => (this.wake = r));
  }

  private parse(): void {
    for (;;) {
      if (this.buf.length && this.buf[0] === 0x4e /* 'N' */) {
        this.messages.push({ type: 'N', body: Buffer.alloc(0) });
        this.buf = this.buf.subarray(1);
        continue;
      }
      if (this.buf.length < 5) return;
      const length = this.buf.readInt32BE(1);
      if (this.buf.length < 1 + length) return;
      this.messages.push({ type: String.fromCharCode(this.buf[0]), body: this.buf.subarray(5, 1 + length) });
      this.buf = this.buf.subarray(1 + length);
    }
  }
}

/** The fields of an ErrorResponse body, by their one-letter codes. */
function errorFields(body: Buffer): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const field of body.toString('utf8').split('\0')) if (field) fields[field[0]] = field.slice(1);
  return fields;
}

/** Runs a conversation and returns everything the gate said before it closed the connection. */
async function converse(port: number, actions: Action[]): Promise<{ messages: BackendMessage[]; leftover: Buffer }> {
  const peer = await Peer.open(port);
  let serverNonce = '';
  for (const action of actions) {
    if (peer.isClosed) break;
    if ('send' in action) peer.send(action.send);
    else if ('await' in action) {
      const message = await peer.next();
      // AuthenticationSASLContinue (11) carries the server-first-message: r=<nonce>,s=...,i=...
      if (message?.type === 'R' && message.body.readInt32BE(0) === 11)
        serverNonce = /r=([^,]*)/.exec(message.body.toString('utf8', 4))?.[1] ?? '';
    } else peer.send(action.final(serverNonce));
  }
  await peer.finish();
  return { messages: peer.messages, leftover: peer.leftover };
}

/** Each way of talking to the gate the review asked for, as an arbitrary conversation. */
function conversations(): fc.Arbitrary<Action[]> {
  const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((b) => Buffer.from(b));
  const send = (b: Buffer): Action => ({ send: b });
  const wait: Action = { await: true };
  const b64 = (n: number) => bytes(n).map((b) => b.toString('base64'));

  const randomBytes = fc.array(bytes(300), { minLength: 1, maxLength: 4 }).map((chunks) => chunks.map(send));
  const truncatedStartup = fc.nat(VALID_STARTUP.length - 1).map((n) => [send(VALID_STARTUP.subarray(0, n))]);

  // Parameters with names and values missing, repeated or unterminated, then a wrong password.
  const layout = fc
    .tuple(
      fc.array(fc.constantFrom('user', 'database', 'postgres', '', 'x\u00e9', 'user\0'), { maxLength: 6 }),
      fc.constantFrom('', '\0', '\0\0'),
    )
    .map(([parts, end]) => startupPacket(parts.join('\0') + end));
  const wrongProof = (nonce: string) => saslResponseText(`c=biws,r=${nonce},p=${Buffer.alloc(32, 7).toString('base64')}`);
  const oddLayout = layout.map((startup) => [
    send(startup),
    wait,
    send(saslInitial('SCRAM-SHA-256', CLIENT_FIRST)),
    wait,
    { final: wrongProof },
  ]);

  // Encryption, GSS and cancel requests, well or badly sized, then maybe a real startup.
  const negotiation = fc
    .tuple(
      fc.array(fc.tuple(fc.constantFrom(SSL_REQUEST, GSSENC_REQUEST, CANCEL_REQUEST, PROTOCOL_3 + 1, 0x00020000, 1234), bytes(12)), {
        minLength: 1,
        maxLength: 3,
      }),
      fc.boolean(),
    )
    .map(([requests, thenStartup]) => [
      ...requests.flatMap(([code, extra]) => [send(startupPacket(extra, code)), wait]),
      ...(thenStartup ? [send(VALID_STARTUP), wait, send(saslInitial('SCRAM-SHA-256', CLIENT_FIRST)), wait, { final: wrongProof }] : []),
    ]);

  // Lengths from nothing to 2 GiB, on the startup packet or on a message after it, with the bytes that follow.
  const hugeLength = fc
    .tuple(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.boolean(), bytes(64))
    .map(([declared, afterStartup, tail]) =>
      afterStartup
        ? [send(VALID_STARTUP), wait, send(Buffer.concat([typed('p', tail, declared)]))]
        : [send(Buffer.concat([startupPacket(tail, PROTOCOL_3, declared)]))],
    );

  // SASLInitialResponse: other mechanisms, wrong declared lengths, broken client-first-messages, cut short.
  const clientFirst = fc.oneof(
    fc.constant(CLIENT_FIRST),
    fc.constantFrom(
      'p=tls-server-end-point,,n=,r=abc',
      'n,,n=,',
      'n,,r=abc',
      'x,,n=,r=abc',
      'n,,n=,r=',
      'n,,n=,r=a,b',
      'n,a=someone,n=,r=abc',
      'n,,m=ext,n=,r=abc',
      '',
    ),
    fc.string({ maxLength: 40 }),
  );
  const saslFirst = fc
    .tuple(
      fc.constantFrom('SCRAM-SHA-256', 'SCRAM-SHA-256-PLUS', 'PLAIN', '', 'SCRAM-SHA-256\0extra'),
      clientFirst,
      fc.option(fc.integer({ min: -2, max: 5000 }), { nil: undefined }),
      fc.option(fc.nat(), { nil: undefined }),
    )
    .map(([mechanism, data, declared, cut]) => {
      const message = saslInitial(mechanism, data, declared);
      // Cut short, the gate rightly waits for the rest: the client hangs up instead.
      if (cut !== undefined) return [send(VALID_STARTUP), wait, send(message.subarray(0, cut % message.length))];
      return [send(VALID_STARTUP), wait, send(message), wait, { final: wrongProof }];
    });

  // SASLResponse: a wrong proof, bad base64, no nonce, another nonce, another binding, garbage, cut short.
  const finalText = fc.oneof(
    b64(32).map((p) => (nonce: string) => `c=biws,r=${nonce},p=${p}`),
    b64(40).map((p) => (nonce: string) => `c=biws,r=${nonce},p=${p}`),
    fc.constant((nonce: string) => `c=biws,r=${nonce},p=!!!not-base64!!!`),
    fc.constant((nonce: string) => `c=biws,r=${nonce},p=`),
    fc.constant((nonce: string) => `c=biws,r=${nonce}`),
    b64(32).map((p) => () => `c=biws,p=${p}`),
    b64(32).map((p) => () => `c=biws,r=${CLIENT_NONCE},p=${p}`),
    b64(32).map((p) => (nonce: string) => `c=eSws,r=${nonce},p=${p}`),
    b64(32).map((p) => (nonce: string) => `r=${nonce},c=biws,p=${p}`),
    fc.string({ maxLength: 80 }).map((s) => () => s),
  );
  const saslFinal = fc.tuple(finalText, fc.option(fc.nat(), { nil: undefined })).map(([text, cut]) => [
    send(VALID_STARTUP),
    wait,
    send(saslInitial('SCRAM-SHA-256', CLIENT_FIRST)),
    wait,
    {
      final: (nonce: string) => {
        const message = saslResponseText(text(nonce));
        return cut === undefined ? message : message.subarray(0, cut % message.length);
      },
    },
  ]);

  // Any of them, the bytes split at random places.
  return fc.oneof(randomBytes, truncatedStartup, oddLayout, negotiation, hugeLength, saslFirst, saslFinal);
}

const saslResponseText = (text: string) => typed('p', text);

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

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mediagate-gate-fuzz-'));
    serve = await startServe(dataDir);
    dbUrl = findRunningEmbedded(dataDir)!;
    port = Number(new URL(dbUrl).port);
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
  function checkRefusal(reply: { messages: BackendMessage[]; leftover: Buffer }): void {
    expect(reply.leftover.length).toBe(0);
    for (const [i, m] of reply.messages.entries()) {
      if (m.type === 'N') continue;
      if (m.type === 'R') {
        // SASL (10) and SASLContinue (11) only: never AuthenticationOk (0) nor SASLFinal (12) to a client without the password.
        expect([10, 11]).toContain(m.body.readInt32BE(0));
        continue;
      }
      expect(m.type).toBe('E');
      expect(i).toBe(reply.messages.length - 1);
      const fields = errorFields(m.body);
      expect(fields.S).toBe('FATAL');
      expect(REFUSAL_CODES).toContain(fields.C);
      seen.set(fields.C, (seen.get(fields.C) ?? 0) + 1);
    }
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
    const codeOf = (reply: { messages: BackendMessage[] }) => errorFields(reply.messages.at(-1)!.body);
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
    const peer = await Peer.open(port);
    peer.send(VALID_STARTUP.subarray(0, 6));
    const started = Date.now();
    const answer = await peer.next();
    expect(Date.now() - started).toBeGreaterThanOrEqual(9_000);
    expect(errorFields(answer!.body)).toMatchObject({ S: 'FATAL', C: '08P01', M: 'canceling authentication due to timeout' });
    await peer.finish();
    await stillServes();
  }, 30_000);
});
