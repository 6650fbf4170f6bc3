import { AppError } from '../errors.js';
import type { AccountService } from './accounts/account.service.js';
import type { OidcVerifier } from './accounts/oidc.verifier.js';
import { type ApiKeyService, type Principal, unauthenticated } from './api-keys/api-key.service.js';
import { KEY_PREFIX } from './api-keys/api-key.format.js';

const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * Resolves `Authorization: Bearer <token>`: an API key, or (when OIDC is configured) a frontend's
 * OpenID Connect token. Every failure is the same 401, whatever went wrong.
 */
export class Authenticator {
  constructor(
    private readonly apiKeys: ApiKeyService,
    private readonly oidc: { verifier: OidcVerifier; accounts: AccountService } | null = null,
  ) {}

  async authenticate(header: string | undefined): Promise<Principal> {
    if (!header) throw new AppError('UNAUTHENTICATED');
    const token = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
    if (!token) throw unauthenticated();
    if (this.oidc && !token.startsWith(KEY_PREFIX) && JWT.test(token)) {
      const identity = await this.oidc.verifier.verify(token).catch(() => {
        throw unauthenticated();
      });
      return this.oidc.accounts.principalForOidc(identity);
    }
    return this.apiKeys.authenticate(token);
  }
}

/** What both doors hand to the services for one request. */
export interface RequestContext {
  requestId: string;
  /** Resolves the caller once per request; rejects with 401 UNAUTHENTICATED. */
  principal(): Promise<Principal>;
}

export function requestContext(auth: Authenticator, header: string | undefined, requestId: string): RequestContext {
  let memo: Promise<Principal> | undefined;
  return {
    requestId,
    principal: () => (memo ??= auth.authenticate(header)),
  };
}
