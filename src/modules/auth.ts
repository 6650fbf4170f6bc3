import { AppError } from '../errors.js';
import type { AccountService } from './accounts/account.service.js';
import type { OidcVerifier } from './accounts/oidc.verifier.js';
import { type ApiKeyService, type Principal, unauthenticated } from './api-keys/api-key.service.js';
import { KEY_PREFIX, type ParsedKey } from './api-keys/api-key.format.js';
import type { SessionService } from './sessions/session.service.js';

const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * Who a credential names, whatever carried it: an API key, a frontend's OpenID Connect token (when
 * OIDC is configured), or an account-area session. Every failure to authenticate is the same 401,
 * whatever went wrong. How a request presents these (headers, cookies, the CSRF token a cookie
 * needs) is the HTTP edge's business: `src/http/authenticate.ts`.
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

  /** The caller behind a bearer token: an API key (already parsed, or its text), or an OpenID Connect token. */
  async fromToken(token: string | ParsedKey): Promise<Principal> {
    if (typeof token !== 'string') return this.apiKeys.authenticate(token);
    if (this.oidc && !token.startsWith(KEY_PREFIX) && JWT.test(token)) {
      const identity = await this.oidc.verifier.verify(token).catch(() => {
        throw unauthenticated();
      });
      const principal = await this.oidc.accounts.principalForOidc(identity);
      return identity.expiresAt ? { ...principal, expiresAt: identity.expiresAt } : principal;
    }
    return this.apiKeys.authenticate(token);
  }

  /** The caller behind a live session's id, with the session's CSRF token for the edge to compare; 401 when there is none. */
  async fromSession(sessionId: string): Promise<{ principal: Principal; csrfToken: string }> {
    if (!this.sessions) throw new AppError('UNAUTHENTICATED');
    const { principal, csrfToken } = await this.sessions.resolve(sessionId);
    return { principal, csrfToken };
  }
}
