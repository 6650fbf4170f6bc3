import { connect, type Socket } from 'node:net';
import fc from 'fast-check';

/**
 * Hostile clients for a PostgreSQL password gate on any host and port: packet builders, a peer that
 * reads the gate's answers message by message, and the fast-check conversations (random bytes,
 * broken startup packets, negotiation and cancel codes, broken SCRAM messages, huge declared
 * lengths). Used by test/integration/embedded-gate-fuzz.test.ts against a real `mediagate serve`,
 * and by bench/gate-compare.ts against our gate and pg-gateway's side by side.
 */
export const SSL_REQUEST = 80877103;
export const GSSENC_REQUEST = 80877104;
export const CANCEL_REQUEST = 80877102;
export const PROTOCOL_3 = 196608;
/** What a gate may answer a refused connection with: PostgreSQL's codes for a broken protocol, a missing or wrong password, an unknown protocol, a timeout. */
export const REFUSAL_CODES = new Set(['08P01', '28000', '28P01', '0A000']);

/** Where a gate listens. */
export interface GateAddress {
  host: string;
  port: number;
}

/** A startup message whose parameters are `params` as given (their layout is the caller's business). */
export function startupPacket(params: Buffer | string, code = PROTOCOL_3, declared?: number): Buffer {
  const body = Buffer.from(params);
  const out = Buffer.alloc(8 + body.length);
  out.writeInt32BE(declared ?? out.length, 0);
  out.writeInt32BE(code, 4);
  body.copy(out, 8);
  return out;
}

export const VALID_STARTUP = startupPacket('user\0postgres\0database\0postgres\0\0');

/** A typed frontend message: its byte, a length counting itself (or `declared`), the body. */
export function typed(type: string, body: Buffer | string, declared?: number): Buffer {
  const data = Buffer.from(body);
  const out = Buffer.alloc(5 + data.length);
  out.write(type, 0, 'latin1');
  out.writeInt32BE(declared ?? 4 + data.length, 1);
  data.copy(out, 5);
  return out;
}

/** A SASLInitialResponse: mechanism, NUL, the data's length (or `declared`), the data. */
export function saslInitial(mechanism: string, data: string, declared?: number): Buffer {
  const d = Buffer.from(data);
  const len = Buffer.alloc(4);
  len.writeInt32BE(declared ?? d.length, 0);
  return typed('p', Buffer.concat([Buffer.from(`${mechanism}\0`), len, d]));
}

export const saslResponseText = (text: string) => typed('p', text);

export const CLIENT_NONCE = 'fyko+d2lbbFgONRv9qkxdawL';
export const CLIENT_FIRST = `n,,n=,r=${CLIENT_NONCE}`;
/** A client-final-message with a proof that is not the password's. */
export const wrongProof = (nonce: string) => saslResponseText(`c=biws,r=${nonce},p=${Buffer.alloc(32, 7).toString('base64')}`);

/** One thing the fuzzing client does: send bytes, wait for the gate's next message, or answer its server-first-message. */
export type Action = { send: Buffer } | { await: true } | { final: (serverNonce: string) => Buffer };

/** A backend message as read off the wire ('N' alone is the gate's one-byte answer to an encryption request). */
export interface BackendMessage {
  type: string;
  body: Buffer;
}

/** A client socket that reads the gate's answers message by message, and every byte until it closes. */
export class Peer {
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

  static open(port: number, host = '127.0.0.1'): Promise<Peer> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, host, () => resolve(new Peer(socket)));
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

  /** Sends and resolves once the socket can take more (or in `ms` at most, or when closed). */
  async sendAndDrain(bytes: Buffer, ms = 2000): Promise<void> {
    if (this.closed || this.socket.destroyed || this.socket.write(bytes)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.socket.off('drain', done);
        this.socket.off('close', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.socket.once('drain', done);
      this.socket.once('close', done);
    });
  }

  /** Drops the connection at once. */
  destroy(): void {
    this.socket.destroy();
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
export function errorFields(body: Buffer): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const field of body.toString('utf8').split('\0')) if (field) fields[field[0]] = field.slice(1);
  return fields;
}

export interface Reply {
  messages: BackendMessage[];
  leftover: Buffer;
  /** Neither answered nor closed within the caller's time limit. */
  hung?: boolean;
}

/**
 * Runs a conversation and returns everything the gate said before it closed the connection. With
 * `timeoutMs`, a gate that neither answers nor closes in time is left (the connection dropped) and
 * the reply says `hung`.
 */
export async function converse(port: number, actions: Action[], host = '127.0.0.1', timeoutMs?: number): Promise<Reply> {
  const peer = await Peer.open(port, host);
  let timer: NodeJS.Timeout | undefined;
  const talk = async (): Promise<Reply> => {
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
  };
  if (timeoutMs === undefined) return talk();
  const late = new Promise<Reply>((resolve) => {
    timer = setTimeout(() => {
      peer.destroy();
      resolve({ messages: peer.messages, leftover: peer.leftover, hung: true });
    }, timeoutMs);
  });
  try {
    return await Promise.race([talk(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The authentication requests a gate may make of a client it has not let in: SASL (10) and SASLContinue (11). */
export const SCRAM_REQUESTS: readonly number[] = [10, 11];

/**
 * What is wrong with a gate's answer to a client without the password (empty when nothing): it may
 * ask for a password (`requests`: SCRAM's unless told, MD5 is 5), say 'N' to an encryption request,
 * and end with one FATAL ErrorResponse carrying a refusal code; never AuthenticationOk nor SASLFinal,
 * never a torn message. `codes` collects the SQLSTATEs seen.
 */
export function refusalProblems(reply: Reply, options: { requests?: readonly number[]; codes?: Map<string, number> } = {}): string[] {
  const { requests = SCRAM_REQUESTS, codes } = options;
  const problems: string[] = [];
  if (reply.leftover.length) problems.push(`${reply.leftover.length} bytes that are no whole message`);
  for (const [i, m] of reply.messages.entries()) {
    if (m.type === 'N') continue;
    if (m.type === 'R') {
      const code = m.body.readInt32BE(0);
      if (!requests.includes(code)) problems.push(`authentication message ${code} (${code === 0 ? 'let in' : 'not a request'})`);
      continue;
    }
    if (m.type !== 'E') {
      problems.push(`a '${m.type}' message before authentication`);
      continue;
    }
    const fields = errorFields(m.body);
    if (i !== reply.messages.length - 1) problems.push(`an ${fields.S ?? '?'} error that is not the last word (${fields.C} ${fields.M})`);
    if (fields.S !== 'FATAL') problems.push(`severity ${fields.S} (${fields.C} ${fields.M})`);
    if (!REFUSAL_CODES.has(fields.C)) problems.push(`SQLSTATE ${fields.C} (${fields.M})`);
    codes?.set(fields.C, (codes.get(fields.C) ?? 0) + 1);
  }
  return problems;
}

/** Each way of talking to a gate the review asked for, as an arbitrary conversation. */
export function conversations(): fc.Arbitrary<Action[]> {
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
