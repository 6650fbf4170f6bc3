import { AppError } from '../errors.js';
import type { AccountService } from './accounts/account.service.js';
import type { OidcVerifier } from './accounts/oidc.verifier.js';
import { type ApiKeyService, type Principal, unauthenticated } from './api-keys/api-key.service.js';
import { KEY_PREFIX, type ParsedKey } from './api-keys/api-key.format.js';
import { csrfMatches, csrfRefused, type SessionService } from './sessions/session.service.js';

/** The token of an `Authorization: Bearer <token>` header. */
export const bearerToken = (authorization: string | undefined) =>
  authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;

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

  /** The name of the cookie a session id arrives in (null: this instance has no sessions). */
  get sessionCookieName(): string | null {
    return this.sessions?.cookie.name ?? null;
  }

  async authenticate(credentials: Credentials | string | undefined): Promise<Principal> {
    const c: Credentials = typeof credentials === 'object' ? credentials : { authorization: credentials };
    if (!c.authorization) {
      if (c.sessionId && this.sessions) return this.fromSession(c.sessionId, c);
      throw new AppError('UNAUTHENTICATED');
    }
    if (c.key) return this.apiKeys.authenticate(c.key);
    const token = bearerToken(c.authorization);
    if (!token) throw unauthenticated();
    if (this.oidc && !token.startsWith(KEY_PREFIX) && JWT.test(token)) {
      const identity = await this.oidc.verifier.verify(token).catch(() => {
        throw unauthenticated();
      });
      const principal = await this.oidc.accounts.principalForOidc(identity);
      return identity.expiresAt ? { ...principal, expiresAt: identity.expiresAt } : principal;
    }
    return this.apiKeys.authenticate(token);
  }

  private async fromSession(sessionId: string, c: Credentials): Promise<Principal> {
    const session = await this.sessions!.resolve(sessionId);
    if (mayChange(c.method) && !csrfMatches(session.csrfToken, c.csrfToken)) throw csrfRefused();
    return session.principal;
  }
}
