import { fastifyCookie } from '@fastify/cookie';
import { AppError } from '../errors.js';
import type { AccountService } from './accounts/account.service.js';
import type { OidcVerifier } from './accounts/oidc.verifier.js';
import { type ApiKeyService, type Principal, unauthenticated } from './api-keys/api-key.service.js';
import { KEY_PREFIX, parseKey, type ParsedKey } from './api-keys/api-key.format.js';
import { CSRF_HEADER, csrfMatches, csrfRefused, type SessionService } from './sessions/session.service.js';

const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** Methods that change nothing; every other method needs the CSRF header when a cookie is the credential. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether a request with this method may change something, and so needs the CSRF token when a cookie is its credential. */
export function mayChange(method: string | undefined): boolean {
  return !SAFE_METHODS.has((method ?? '').toUpperCase());
}

/** What a request presents to prove who it is. */
export interface Credentials {
  /** The Authorization header; when present it is the only credential looked at. */
  authorization?: string;
  /** The raw Cookie header (the account area's session cookie, `__Host-mg_session`). */
  cookie?: string;
  /** The HTTP method; unknown counts as one that changes something. */
  method?: string;
  /** The `x-csrf-token` header (or, on a WebSocket, the connection parameter). */
  csrfToken?: string;
  /** The Authorization header's API key, already read (null: it holds none); unset, it is read from `authorization`. */
  key?: ParsedKey | null;
}

type HttpRequest = { method?: string; headers: Record<string, string | string[] | undefined> };

/** The token of an `Authorization: Bearer <token>` header. */
const bearerToken = (authorization: string | undefined) => (authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined);

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

/** The credentials of an HTTP request (Fastify's or Node's). */
export function credentialsOf(req: HttpRequest): Credentials {
  const header = (name: string) => {
    const v = req.headers[name];
    return typeof v === 'string' ? v : undefined;
  };
  return { authorization: header('authorization'), cookie: header('cookie'), method: req.method, csrfToken: header(CSRF_HEADER), key: presentedKey(req) };
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

/**
 * Resolves a request's caller: `Authorization: Bearer <token>` (an API key, or when OIDC is
 * configured a frontend's OpenID Connect token), or, with no Authorization header, the account
 * area's session cookie. Every failure to authenticate is the same 401, whatever went wrong. A
 * cookie is sent by the browser on its own, so a cookie-authenticated request that may change
 * something must also carry the session's CSRF token: else 403 FORBIDDEN, before anything is done.
 */
export class Authenticator {
  constructor(
    private readonly apiKeys: ApiKeyService,
    private readonly oidc: { verifier: OidcVerifier; accounts: AccountService } | null = null,
    private readonly sessions: SessionService | null = null,
  ) {}

  async authenticate(credentials: Credentials | string | undefined): Promise<Principal> {
    const c: Credentials = typeof credentials === 'object' ? credentials : { authorization: credentials };
    if (!c.authorization) {
      const sessionId = this.sessions ? sessionIdFrom(c.cookie, this.sessions.cookie.name) : undefined;
      if (sessionId) return this.fromSession(sessionId, c);
      throw new AppError('UNAUTHENTICATED');
    }
    if (c.key) return this.apiKeys.authenticate(c.key);
    const token = bearerToken(c.authorization);
    if (!token) throw unauthenticated();
    if (this.oidc && !token.startsWith(KEY_PREFIX) && JWT.test(token)) {
      const identity = await this.oidc.verifier.verify(token).catch(() => {
        throw unauthenticated();
      });
      return this.oidc.accounts.principalForOidc(identity);
    }
    return this.apiKeys.authenticate(token);
  }

  private async fromSession(sessionId: string, c: Credentials): Promise<Principal> {
    const session = await this.sessions!.resolve(sessionId);
    if (mayChange(c.method) && !csrfMatches(session.csrfToken, c.csrfToken)) throw csrfRefused();
    return session.principal;
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
    principal = auth.authenticate(credentialsOf(req));
    resolvedPrincipals.set(req, principal);
  }
  return principal;
}

/** The request context of an HTTP request (either door), sharing principalOf's one authentication. */
export function httpRequestContext(auth: Authenticator, req: HttpRequest & { id: string }): RequestContext {
  return { requestId: req.id, principal: () => principalOf(auth, req) };
}
