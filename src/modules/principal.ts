/** Who is calling: resolved from a request's credentials at the edge, or the operator. */
export interface Principal {
  accountId: string;
  apiKeyId: string | null;
  scopes: ReadonlySet<string>;
  isMember: boolean;
  /** The account's roles beyond an ordinary holder (analyst, admin). */
  roles: ReadonlySet<string>;
  /**
   * How the caller signed in: an API key, a frontend's OpenID Connect token, the account area's
   * session cookie, or the operator's command line on the server (`mediagate account …`, `key …`).
   */
  via: 'api_key' | 'oidc' | 'session' | 'operator';
  /** The account-area session's row id (never its secret), when a session cookie signed in. */
  sessionId?: string;
  /** When the credential stops working on its own: a session's end, an OpenID Connect token's `exp` (API keys do not expire). */
  expiresAt?: Date;
}

/** What a key may do. A key gets every scope unless created with fewer. */
export const API_KEY_SCOPES = ['parse', 'transcribe', 'read', 'keys'] as const;

/**
 * The operator at the server's command line: an admin of no account of its own, holding every
 * scope. Every service method takes a caller, and the CLI is one too, so no door skips a rule.
 */
export const OPERATOR: Principal = Object.freeze({
  accountId: '00000000-0000-0000-0000-000000000000',
  apiKeyId: null,
  scopes: new Set<string>(API_KEY_SCOPES),
  isMember: true,
  roles: new Set(['admin']),
  via: 'operator',
});
