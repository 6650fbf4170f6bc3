import { createHash, createHmac, randomBytes } from 'node:crypto';
import { AppError } from '../../errors.js';
import { isUuid } from '../../db/sql-values.js';
import { SESSION_SCOPES, type Principal, unauthenticated } from '../api-keys/api-key.service.js';
import { accountPolicy } from '../accounts/account.policy.js';
import type { AccountService } from '../accounts/account.service.js';
import type { OidcVerifier } from '../accounts/oidc.verifier.js';
import { sessionCookie, type SessionCookie } from './session.cookie.js';
import type { SessionRepository, StartedSession } from './session.repository.js';

/** The header a cookie-authenticated request that changes something must carry. */

/** 256 random bits, base64url: login tokens, session ids and CSRF tokens. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const newToken = () => randomBytes(32).toString('base64url');
/** The page's secret whose SHA-256 is the nonce of its sign-in (like PKCE's code_verifier). */
const NONCE_VERIFIER = /^[A-Za-z0-9_-]{43,128}$/;
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** The nonce a sign-in sends to the provider for this verifier: base64url(SHA-256(verifier)). */
export const nonceFor = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** A session as the account page sees it. */
export interface SessionView {
  csrfToken: string;
  expiresAt: Date;
  account: { id: string; name: string };
}

export interface SessionSettings {
  pepper: string;
  /** Where the account page is served from, without a trailing slash (PUBLIC_URL). */
  publicUrl: string;
  loginLinkMinutes: number;
  sessionHours: number;
  /** NODE_ENV=production: the cookie is always `__Host-` and Secure. */
  production: boolean;
}

/**
 * Sign-in to the account area: the operator makes a single-use login link, or the page signs in
 * with the OpenID Connect provider; either is exchanged once for a session whose id travels only in
 * an HttpOnly cookie. A new sign-in in a browser ends the session it had. Tokens and session ids are
 * stored as HMAC-SHA-256 with the server's pepper (each kind with its own label), like API keys, so
 * a copy of the tables signs nobody in.
 */
export class SessionService {
  /** The cookie's name and Secure flag (see sessionCookie). */
  readonly cookie: SessionCookie;

  constructor(
    private readonly repo: SessionRepository,
    private readonly accounts: AccountService,
    private readonly settings: SessionSettings,
    private readonly oidc: OidcVerifier | null = null,
  ) {
    this.cookie = sessionCookie(settings.publicUrl, settings.production);
  }

  get sessionSeconds(): number {
    return Math.max(1, Math.floor(this.settings.sessionHours * 3600));
  }

  /**
   * A link to the account page that signs the account in once, within LOGIN_LINK_MINUTES. The token
   * is in the fragment, which browsers never send to a server, so it stays out of logs and Referer.
   */
  async createLoginLink(principal: Principal, accountId: string): Promise<{ url: string; expiresAt: Date }> {
    accountPolicy.administer(principal, 'make login links');
    if (!isUuid(accountId)) throw new AppError('NOT_FOUND', 'No such account.');
    await this.accounts.view(principal, accountId);
    const token = newToken();
    const expiresAt = await this.repo.createLoginLink(accountId, this.hash('login-link', token), this.settings.loginLinkMinutes);
    return { url: `${this.settings.publicUrl}/account/#login=${token}`, expiresAt };
  }

  /** Which account a link would sign in, without spending it (the page asks before switching accounts). */
  async peek(token: unknown): Promise<{ account: { id: string; name: string }; expiresAt: Date }> {
    const link = typeof token === 'string' && TOKEN.test(token) ? await this.repo.peek(this.hash('login-link', token)) : null;
    if (!link) throw this.badLink();
    return { account: { id: link.accountId, name: link.accountName }, expiresAt: link.expiresAt };
  }

  /**
   * Spends a login link's token for a new session, ending the session `replacing` (the browser's
   * current one) in the same statement. Unknown, used and expired tokens are the same 401, so
   * nobody can tell them apart, and end nothing. The returned `sessionId` goes into the cookie and
   * nowhere else.
   */
  async start(token: unknown, replacing: string | null = null): Promise<SessionView & { sessionId: string }> {
    if (typeof token !== 'string' || !TOKEN.test(token)) throw this.badLink();
    const sessionId = newToken();
    const csrfToken = newToken();
    const started = await this.repo.exchange(this.hash('login-link', token), this.newSession(sessionId, csrfToken, replacing));
    if (!started) throw this.badLink();
    return this.started(sessionId, csrfToken, started);
  }

  /**
   * Exchanges a frontend's OpenID Connect ID token, once, for a session. The page made the sign-in
   * with nonce = base64url(SHA-256(nonceVerifier)) and only it holds the verifier, so a token that
   * leaked elsewhere opens no session. Any problem is the same 401 and changes nothing.
   */
  async startWithIdToken(
    idToken: string,
    nonceVerifier: string,
    replacing: string | null = null,
  ): Promise<SessionView & { sessionId: string }> {
    if (!this.oidc || !JWT.test(idToken) || !NONCE_VERIFIER.test(nonceVerifier)) throw this.badIdToken();
    const identity = await this.oidc.verify(idToken, { nonce: nonceFor(nonceVerifier) }).catch(() => {
      throw this.badIdToken();
    });
    const { accountId } = await this.accounts.principalForOidc(identity);
    const sessionId = newToken();
    const csrfToken = newToken();
    const started = await this.repo.open(accountId, this.hash('id-token', idToken), this.newSession(sessionId, csrfToken, replacing));
    if (!started) throw this.badIdToken();
    return this.started(sessionId, csrfToken, started);
  }

  /**
   * The session a sign-in or logout in this browser would end: its live one, with the CSRF token the
   * edge must see before ending it (so no other site can sign it out or switch its account). A
   * cookie of a dead session ends nothing (null).
   */
  async endable(sessionId: string | undefined): Promise<{ sessionId: string; csrfToken: string } | null> {
    if (!sessionId) return null;
    const live = TOKEN.test(sessionId) ? await this.repo.findLive(this.hash('session', sessionId)) : null;
    return live ? { sessionId, csrfToken: live.csrfToken } : null;
  }

  /** The live session behind a cookie's id, with its principal; 401 UNAUTHENTICATED when there is none. */
  async resolve(sessionId: string): Promise<SessionView & { principal: Principal }> {
    const live = TOKEN.test(sessionId) ? await this.repo.findLive(this.hash('session', sessionId)) : null;
    if (!live) throw unauthenticated();
    return {
      csrfToken: live.csrfToken,
      expiresAt: live.expiresAt,
      account: { id: live.accountId, name: live.accountName },
      // Every scope (the page manages keys), the account's roles and membership.
      principal: {
        accountId: live.accountId,
        apiKeyId: null,
        scopes: new Set(SESSION_SCOPES),
        isMember: live.isMember,
        roles: new Set(live.roles),
        via: 'session',
        sessionId: live.id,
        expiresAt: live.expiresAt,
      },
    };
  }

  /** Ends the session on the server (idempotent): its cookie no longer works, wherever it was copied. */
  async end(sessionId: string): Promise<void> {
    if (TOKEN.test(sessionId)) await this.repo.revoke(this.hash('session', sessionId));
  }

  private newSession(sessionId: string, csrfToken: string, replacing: string | null) {
    return {
      sessionHash: this.hash('session', sessionId),
      csrfToken,
      hours: this.settings.sessionHours,
      replacingHash: replacing && TOKEN.test(replacing) ? this.hash('session', replacing) : null,
    };
  }

  private started(sessionId: string, csrfToken: string, s: StartedSession): SessionView & { sessionId: string } {
    return { sessionId, csrfToken, expiresAt: s.expiresAt, account: { id: s.accountId, name: s.accountName } };
  }

  private hash(label: 'login-link' | 'session' | 'id-token', value: string): Buffer {
    return createHmac('sha256', this.settings.pepper).update(`mediagate ${label}:`).update(value).digest();
  }

  private badLink() {
    return new AppError('UNAUTHENTICATED', 'This login link is not valid: it is unknown, already used or expired. Ask for a new one.');
  }

  private badIdToken() {
    return new AppError(
      'UNAUTHENTICATED',
      'This sign-in is not valid: the ID token is invalid, expired, for another sign-in or already used. Sign in again.',
    );
  }
}
