import { AppError } from '../errors.js';
import { unauthenticated } from '../modules/api-keys/api-key.service.js';
import type { ParsedKey } from '../modules/api-keys/api-key.format.js';
import type { Authenticator } from '../modules/auth.js';
import type { Principal } from '../modules/principal.js';
import { csrfMatches, csrfRefused, mayChange } from './csrf.js';

/** The token of an `Authorization: Bearer <token>` header (RFC 6750), if it is one. */
export const bearerToken = (authorization: string | undefined) =>
  authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;

/** What a request presents to prove who it is. */
export interface Credentials {
  /** The Authorization header; when present it is the only credential looked at. */
  authorization?: string;
  /** The account area's session id, read from its cookie (`__Host-mg_session`) by the door. */
  sessionId?: string;
  /** The HTTP method; unknown counts as one that changes something. */
  method?: string;
  /** The `x-csrf-token` header (or, on a WebSocket, the connection parameter). */
  csrfToken?: string;
  /** The Authorization header's API key, already read (null: it holds none); unset, it is read from `authorization`. */
  key?: ParsedKey | null;
}

/**
 * A request's caller: `Authorization: Bearer <token>` when the header is there (the only credential
 * then looked at), else the account area's session cookie, which for a method that may change
 * something also needs the session's CSRF token (403 FORBIDDEN without it, before anything is done).
 */
export async function authenticate(auth: Authenticator, c: Credentials): Promise<Principal> {
  if (!c.authorization) {
    if (!c.sessionId || !auth.sessionCookieName) throw new AppError('UNAUTHENTICATED');
    const session = await auth.fromSession(c.sessionId);
    if (mayChange(c.method) && !csrfMatches(session.csrfToken, c.csrfToken)) throw csrfRefused();
    return session.principal;
  }
  if (c.key) return auth.fromToken(c.key);
  const token = bearerToken(c.authorization);
  if (!token) throw unauthenticated();
  return auth.fromToken(token);
}
