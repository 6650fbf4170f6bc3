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
    admit(socket, keys, target);
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

/** Runs one connection's startup and SCRAM exchange, then hands it to PGlite with its startup message replayed. */
function admit(socket: Socket, keys: ScramKeys, target: string): void {
  socket.setNoDelay(true);
  let pending = Buffer.alloc(0);
  let startup: Buffer | null = null;
  let exchange: { clientFirstBare: string; serverFirst: string; nonce: string; gs2Header: string } | null = null;
  const timer = setTimeout(() => socket.destroy(), HANDSHAKE_MS);
  const refuse = (code: string, message: string) => {
    clearTimeout(timer);
    socket.off('data', onData);
    socket.end(errorResponse(code, message));
  };

  const onData = (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      if (!startup) {
        // Untyped: length, then a code (startup, SSL, GSS encryption or cancel request).
        if (pending.length < 8) return;
        const length = pending.readInt32BE(0);
        if (length < 8 || length > MAX_STARTUP) return refuse('08P01', 'invalid startup packet length');
        if (pending.length < length) return;
        const message = pending.subarray(0, length);
        pending = pending.subarray(length);
        const code = message.readInt32BE(4);
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          // No encryption on a loopback socket: the client goes on in the clear (or gives up if it requires it).
          socket.write('N');
          continue;
        }
        if (code === CANCEL_REQUEST) {
          clearTimeout(timer);
          socket.destroy();
          return;
        }
        if (code !== PROTOCOL_3) return refuse('0A000', 'unsupported frontend protocol');
        startup = Buffer.from(message);
        socket.write(authentication(10, Buffer.from('SCRAM-SHA-256\0\0')));
        continue;
      }
      // Typed: a byte, then a length that counts itself.
      if (pending.length < 5) return;
      const length = pending.readInt32BE(1);
      if (pending[0] !== 0x70 /* 'p' */) return refuse('28000', 'password authentication is required');
      if (length < 4 || length > MAX_MESSAGE) return refuse('08P01', 'invalid message length');
      if (pending.length < 1 + length) return;
      const body = pending.subarray(5, 1 + length);
      pending = pending.subarray(1 + length);
      if (!exchange) {
        const mechanismEnd = body.indexOf(0);
        if (mechanismEnd < 0 || body.toString('utf8', 0, mechanismEnd) !== 'SCRAM-SHA-256') return refuse('28000', 'SCRAM-SHA-256 is the only mechanism offered');
        const clientFirst = body.toString('utf8', mechanismEnd + 5);
        // gs2 header "n,," or "y,,": no channel binding over a loopback socket without TLS.
        const parsed = /^([ny],[^,]*,)(n=[^,]*,r=([^,]+).*)$/.exec(clientFirst);
        if (!parsed) return refuse('08P01', 'malformed SCRAM client-first-message');
        const nonce = parsed[3] + randomBytes(18).toString('base64');
        const serverFirst = `r=${nonce},s=${keys.salt.toString('base64')},i=${ITERATIONS}`;
        exchange = { gs2Header: parsed[1], clientFirstBare: parsed[2], serverFirst, nonce };
        socket.write(authentication(11, Buffer.from(serverFirst)));
        continue;
      }
      const clientFinal = body.toString('utf8');
      const proofAt = clientFinal.lastIndexOf(',p=');
      const withoutProof = clientFinal.slice(0, proofAt);
      const proof = Buffer.from(clientFinal.slice(proofAt + 3), 'base64');
      const authMessage = `${exchange.clientFirstBare},${exchange.serverFirst},${withoutProof}`;
      const signature = hmac(keys.storedKey, authMessage);
      const expected = `c=${Buffer.from(exchange.gs2Header).toString('base64')},r=${exchange.nonce}`;
      const clientKey = proof.length === signature.length ? Buffer.from(proof.map((b, i) => b ^ signature[i])) : null;
      const verified =
        proofAt > 0 && withoutProof === expected && clientKey !== null && timingSafeEqual(createHash('sha256').update(clientKey).digest(), keys.storedKey);
      if (!verified) return refuse('28P01', `password authentication failed for user "${startupUser(startup)}"`);
      socket.write(authentication(12, Buffer.from(`v=${hmac(keys.serverKey, authMessage).toString('base64')}`)));
      clearTimeout(timer);
      socket.off('data', onData);
      join(socket, target, startup, pending);
      return;
    }
  };
  socket.on('data', onData);
  socket.on('error', () => socket.destroy());
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

/** The user a startup message names (for the error message, as PostgreSQL words it). */
function startupUser(startup: Buffer | null): string {
  const parts = startup ? startup.toString('utf8', 8).split('\0') : [];
  const at = parts.indexOf('user');
  return at >= 0 ? parts[at + 1].replace(/[^\w.@-]/g, '') : '';
}
