/** Who is calling, as resolved from the Authorization header. */
export interface Principal {
  accountId: string;
  apiKeyId: string | null;
  scopes: ReadonlySet<string>;
  isMember: boolean;
  /** The account's roles beyond an ordinary holder (analyst, admin). */
  roles: ReadonlySet<string>;
  /** How the caller signed in: an API key, a frontend's OpenID Connect token, or the account area's session cookie. */
  via: 'api_key' | 'oidc' | 'session';
  /** The account-area session's row id (never its secret), when a session cookie signed in. */
  sessionId?: string;
  /** When the credential stops working on its own: a session's end, an OpenID Connect token's `exp` (API keys do not expire). */
  expiresAt?: Date;
}
