import { AppError } from '../errors.js';

/** SQLSTATEs of a lost or refused connection: class 08, the server shutting down or not ready, no slot free. */
const LOST_STATES = /^(08[0-9A-Z]{3}|57P0[1-3]|53300)$/;
/** The socket to the database broke (node's codes; other layers wrap their own network errors). */
const LOST_SOCKET = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTCONN']);
/** What pg and its pool say when a connection is gone, without a code. */
const LOST_MESSAGES =
  /^(Connection terminated|Client (has encountered a connection error|was closed) and is not queryable|timeout exceeded when trying to connect)/;

/**
 * A request that failed because its database connection was lost (killed by an operator, a restart,
 * a network cut) gets 503 and may simply be sent again, instead of a 500 that says "bug": the pool
 * opens fresh connections on the next query. A task whose hold was placed keeps it until the
 * sweeper releases it at its deadline, so nothing is charged for it. Null for any other error.
 * Looks through `cause` and graphql-js's wrappers (`originalError`, `thrownValue`) by shape, not
 * class, since socket errors may come from another realm.
 */
export function databaseUnavailable(err: unknown): AppError | null {
  const pending = [err];
  const seen = new Set<unknown>();
  while (pending.length) {
    const e = pending.shift();
    if (!e || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    const { code, message, cause, originalError, thrownValue } = e as Record<string, unknown>;
    if (typeof code === 'string' && (LOST_STATES.test(code) || LOST_SOCKET.has(code))) return unavailable();
    if (typeof message === 'string' && LOST_MESSAGES.test(message)) return unavailable();
    pending.push(cause, originalError, thrownValue);
  }
  return null;
}

const unavailable = () =>
  new AppError('PROVIDER_UNAVAILABLE', 'The service lost its database connection; send the request again in a moment.');
