import { fastifyCookie } from '@fastify/cookie';
import { parseKey, type ParsedKey } from '../modules/api-keys/api-key.format.js';
import type { Authenticator } from '../modules/auth.js';
import type { Principal } from '../modules/principal.js';
import { authenticate, bearerToken, type Credentials } from './authenticate.js';
import { CSRF_HEADER } from './csrf.js';

/**
 * What an HTTP request presents, read the way HTTP carries it (headers, the session cookie), and the
 * request context both doors hand the services: the caller, authenticated once per request.
 */

export type HttpRequest = { method?: string; headers: Record<string, string | string[] | undefined> };

const presentedKeys = new WeakMap<object, ParsedKey | null>();

/** The API key a request presents, read once per request: the rate limiter and authentication both need it. */
export function presentedKey(req: HttpRequest): ParsedKey | null {
  let key = presentedKeys.get(req);
  if (key === undefined) {
    const authorization = req.headers.authorization;
    const token = bearerToken(typeof authorization === 'string' ? authorization : undefined);
    key = token ? parseKey(token) : null;
    presentedKeys.set(req, key);
  }
  return key;
}

/** The credentials of an HTTP request (Fastify's or Node's); the session id is read from the cookie named `sessionCookie`. */
export function credentialsOf(req: HttpRequest, sessionCookie: string | null): Credentials {
  const header = (name: string) => {
    const v = req.headers[name];
    return typeof v === 'string' ? v : undefined;
  };
  return {
    authorization: header('authorization'),
    sessionId: sessionCookie ? sessionIdFrom(header('cookie'), sessionCookie) : undefined,
    method: req.method,
    csrfToken: header(CSRF_HEADER),
    key: presentedKey(req),
  };
}

/** The session id in a Cookie header under the cookie's name (no other name counts), if there is one. */
export function sessionIdFrom(cookieHeader: string | undefined, name: string): string | undefined {
  if (!cookieHeader) return undefined;
  try {
    return fastifyCookie.parse(cookieHeader)[name] || undefined;
  } catch {
    return undefined;
  }
}

/** What both doors hand to the services for one request. */
export interface RequestContext {
  requestId: string;
  /** Resolves the caller once per request; rejects with 401 UNAUTHENTICATED (403 FORBIDDEN for a missing CSRF token). */
  principal(): Promise<Principal>;
}

const resolvedPrincipals = new WeakMap<object, Promise<Principal>>();

/**
 * An HTTP request's caller, authenticated once however often it is asked: the rate limiter asks
 * first (to count the key's request once it is proven), the handler then gets the same answer.
 */
export function principalOf(auth: Authenticator, req: HttpRequest): Promise<Principal> {
  let principal = resolvedPrincipals.get(req);
  if (!principal) {
    principal = authenticate(auth, credentialsOf(req, auth.sessionCookieName));
    resolvedPrincipals.set(req, principal);
  }
  return principal;
}

/** The request context of an HTTP request (either door), sharing principalOf's one authentication. */
export function httpRequestContext(auth: Authenticator, req: HttpRequest & { id: string }): RequestContext {
  return { requestId: req.id, principal: () => principalOf(auth, req) };
}
