import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A password in front of the embedded database. pglite-socket authenticates nobody: whoever reaches
 * its port is in, and 127.0.0.1 is every local user's. This server takes each connection through the
 * PostgreSQL startup and a SCRAM-SHA-256 exchange (what PostgreSQL asks by default, so the `pg` driver
 * and psql answer it, the password never crosses the wire, and the client checks the server too), then
 * joins it to PGlite's own socket server, which listens only on a Unix socket in a private directory.
 * A wrong or missing password gets PostgreSQL's own error (28P01) and the connection is closed.
 */
export interface PasswordGate {
  host: string;
  port: number;
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
const PROTOCOL_3 = 196608;
/** PostgreSQL's own cap on a startup packet. */
const MAX_STARTUP = 10_000;
/** SASL messages are short; anything longer is not a client we know. */
const MAX_MESSAGE = 4096;
/** Bytes held for a connection before it authenticates: one startup packet and one SASL message, never more. */
const MAX_BUFFERED = MAX_STARTUP + MAX_MESSAGE;
const ITERATIONS = 4096;
/** A connection that has not authenticated by then is closed. */
const HANDSHAKE_MS = 10_000;

/** Serves the gate on 127.0.0.1 (an ephemeral port) in front of `target`, PGlite's Unix socket. */
export async function startPasswordGate(password: string, target: string): Promise<PasswordGate> {
  const keys = scramKeys(password);
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    try {
      admit(socket, keys, target);
    } catch {
      socket.destroy();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (!address || typeof address !== 'object') throw new Error('the embedded database gate has no address');
  return {
    host: '127.0.0.1',
    port: address.port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

interface ScramKeys {
  salt: Buffer;
  storedKey: Buffer;
  serverKey: Buffer;
}

/** What a PostgreSQL server keeps of a password (RFC 5802): derived once, the password itself is not kept. */
function scramKeys(password: string): ScramKeys {
  const salt = randomBytes(16);
  const salted = pbkdf2Sync(password.normalize('NFKC'), salt, ITERATIONS, 32, 'sha256');
  const clientKey = hmac(salted, 'Client Key');
  return { salt, storedKey: createHash('sha256').update(clientKey).digest(), serverKey: hmac(salted, 'Server Key') };
}

const hmac = (key: Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/** A refusal: PostgreSQL's SQLSTATE and words, sent as a FATAL ErrorResponse before the connection closes. */
class Refusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const violation = (message: string) => new Refusal('08P01', message);

/** A startup message, checked: its bytes (replayed to PGlite once authenticated) and the user it names. */
interface Startup {
  bytes: Buffer;
  user: string;
}

interface Exchange {
  gs2Header: string;
  clientFirstBare: string;
  serverFirst: string;
  nonce: string;
}

/**
 * Runs one connection's startup and SCRAM exchange, then hands it to PGlite with its startup message
 * replayed. Nothing a client sends can throw out of here: every failure is a FATAL ErrorResponse and
 * the end of this connection only.
 */
function admit(socket: Socket, keys: ScramKeys, target: string): void {
  socket.setNoDelay(true);
  let pending = Buffer.alloc(0);
  let startup: Startup | null = null;
  let exchange: Exchange | null = null;
  let done = false;
  const finish = () => {
    done = true;
    socket.off('data', onData);
  };
  const refuse = (code: string, message: string) => {
    finish();
    // Kept reading (and dropping) until the client closes, so the error is not lost to a reset; the timer ends a client that never does.
    socket.resume();
    socket.end(errorResponse(code, message));
  };
  const timer = setTimeout(() => {
    if (done) socket.destroy();
    else refuse('08P01', 'canceling authentication due to timeout');
  }, HANDSHAKE_MS);
  socket.once('close', () => clearTimeout(timer));

  const step = (): void => {
    for (;;) {
      if (!startup) {
        // Untyped: length, then a code (startup, SSL, GSS encryption or cancel request).
        if (pending.length < 8) return;
        const length = pending.readInt32BE(0);
        if (length < 8 || length > MAX_STARTUP) throw violation('invalid length of startup packet');
        if (pending.length < length) return;
        const message = Buffer.from(pending.subarray(0, length));
        pending = pending.subarray(length);
        const code = message.readInt32BE(4);
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          if (length !== 8) throw violation('invalid length of startup packet');
          // No encryption on a loopback socket: the client goes on in the clear (or gives up if it requires it).
          socket.write('N');
          continue;
        }
        if (code === CANCEL_REQUEST) {
          // Nothing to cancel before a session exists here: PostgreSQL closes such a connection without a word.
          finish();
          socket.destroy();
          return;
        }
        if (code !== PROTOCOL_3) throw new Refusal('0A000', 'unsupported frontend protocol');
        startup = { bytes: message, user: startupUser(message) };
        socket.write(authentication(10, Buffer.from('SCRAM-SHA-256\0\0')));
        continue;
      }
      // Typed: a byte, then a length that counts itself.
      if (pending.length < 5) return;
      if (pending[0] !== 0x70 /* 'p' */) throw new Refusal('28000', 'password authentication is required');
      const length = pending.readInt32BE(1);
      if (length < 4 || length > MAX_MESSAGE) throw violation('invalid message length');
      if (pending.length < 1 + length) return;
      const body = Buffer.from(pending.subarray(5, 1 + length));
      pending = pending.subarray(1 + length);
      if (!exchange) {
        exchange = clientFirst(body, keys);
        socket.write(authentication(11, Buffer.from(exchange.serverFirst)));
        continue;
      }
      const authMessage = clientFinal(body, exchange, keys, startup.user);
      finish();
      clearTimeout(timer);
      socket.write(authentication(12, Buffer.from(`v=${hmac(keys.serverKey, authMessage).toString('base64')}`)));
      join(socket, target, startup.bytes, pending);
      return;
    }
  };

  const onData = (chunk: Buffer) => {
    if (done) return;
    try {
      // A client that authenticates never has more than one message outstanding.
      if (pending.length + chunk.length > MAX_BUFFERED) throw violation('too much data before authentication');
      pending = Buffer.concat([pending, chunk]);
      step();
    } catch (err) {
      if (err instanceof Refusal) refuse(err.code, err.message);
      else refuse('08P01', 'invalid authentication exchange');
    }
  };
  socket.on('data', onData);
}

/** A SASLInitialResponse: the mechanism, then the client-first-message; answered by the server-first-message. */
function clientFirst(body: Buffer, keys: ScramKeys): Exchange {
  const mechanismEnd = body.indexOf(0);
  if (mechanismEnd < 0) throw violation('malformed SASLInitialResponse message');
  if (body.toString('utf8', 0, mechanismEnd) !== 'SCRAM-SHA-256') throw new Refusal('28000', 'SCRAM-SHA-256 is the only mechanism offered');
  if (body.length < mechanismEnd + 5) throw violation('malformed SASLInitialResponse message');
  const declared = body.readInt32BE(mechanismEnd + 1);
  if (declared !== body.length - mechanismEnd - 5) throw violation('malformed SASLInitialResponse message');
  // gs2 header "n,," or "y,," (no channel binding over a loopback socket without TLS), then n=user,r=nonce[,extensions].
  const parsed = /^([ny],(?:a=[^,]*)?,)(n=[^,]*,r=([\x21-\x2b\x2d-\x7e]+)(?:,[\s\S]*)?)$/.exec(body.toString('utf8', mechanismEnd + 5));
  if (!parsed) throw violation('malformed SCRAM message');
  const nonce = parsed[3] + randomBytes(18).toString('base64');
  return {
    gs2Header: parsed[1],
    clientFirstBare: parsed[2],
    nonce,
    serverFirst: `r=${nonce},s=${keys.salt.toString('base64')},i=${ITERATIONS}`,
  };
}

/** A SASLResponse: the client-final-message, checked against the exchange; the AuthMessage when the proof is right. */
function clientFinal(body: Buffer, exchange: Exchange, keys: ScramKeys, user: string): string {
  const parsed = /^(c=([A-Za-z0-9+/=]*),r=([^,]*)(?:,[\s\S]*)?),p=([A-Za-z0-9+/]{43}=)$/.exec(body.toString('utf8'));
  if (!parsed) throw violation('malformed SCRAM message');
  const [, withoutProof, binding, nonce, proofText] = parsed;
  if (binding !== Buffer.from(exchange.gs2Header).toString('base64')) throw violation('SCRAM channel binding check failed');
  if (nonce !== exchange.nonce) throw violation('SCRAM nonce mismatch');
  const authMessage = `${exchange.clientFirstBare},${exchange.serverFirst},${withoutProof}`;
  const proof = Buffer.from(proofText, 'base64');
  const signature = hmac(keys.storedKey, authMessage);
  const clientKey = Buffer.from(proof.map((b, i) => b ^ signature[i]));
  if (proof.length !== signature.length || !timingSafeEqual(createHash('sha256').update(clientKey).digest(), keys.storedKey)) {
    throw new Refusal('28P01', `password authentication failed for user "${user}"`);
  }
  return authMessage;
}

/** Authenticated: PGlite answers the replayed startup (AuthenticationOk, parameters, ReadyForQuery) and the rest flows both ways. */
function join(socket: Socket, target: string, startup: Buffer, rest: Buffer): void {
  const upstream = connect(target);
  upstream.write(startup);
  if (rest.length) upstream.write(rest);
  socket.pipe(upstream);
  upstream.pipe(socket);
  upstream.on('error', () => socket.destroy());
  upstream.on('close', () => socket.destroy());
  socket.on('close', () => upstream.destroy());
}

/** An Authentication message: 'R', length, the request code, its data. */
function authentication(code: number, data: Buffer): Buffer {
  const out = Buffer.alloc(9 + data.length);
  out.write('R', 0);
  out.writeInt32BE(8 + data.length, 1);
  out.writeInt32BE(code, 5);
  data.copy(out, 9);
  return out;
}

/** An ErrorResponse as PostgreSQL sends it before closing a connection it refuses. */
function errorResponse(code: string, message: string): Buffer {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${message}\0\0`);
  const out = Buffer.alloc(5 + fields.length);
  out.write('E', 0);
  out.writeInt32BE(4 + fields.length, 1);
  fields.copy(out, 5);
  return out;
}

/**
 * The user a startup message names, its layout checked as PostgreSQL checks it (name/value pairs of
 * NUL-terminated strings, then a NUL), printable characters only (it goes into an error message).
 */
function startupUser(message: Buffer): string {
  if (message.length < 9 || message[message.length - 1] !== 0)
    throw violation('invalid startup packet layout: expected terminator as last byte');
  const parts = message.toString('utf8', 8, message.length - 1).split('\0');
  // Pairs, then the final NUL: an odd count means a name without a value, an empty name is the terminator and must come last.
  const layoutOk = parts.length % 2 === 1 && parts.every((part, i) => (i === parts.length - 1 ? part === '' : i % 2 === 1 || part !== ''));
  if (!layoutOk) throw violation('invalid startup packet layout: expected terminator as last byte');
  const at = parts.findIndex((part, i) => i % 2 === 0 && part === 'user');
  const user = at >= 0 ? parts[at + 1] : '';
  if (!user) throw new Refusal('28000', 'no PostgreSQL user name specified in startup packet');
  return user.replace(/[^\w.@-]/g, '');
}
