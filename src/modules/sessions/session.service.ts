import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError } from '../../errors.js';
import { isUuid } from '../../db/sql-values.js';
import { API_KEY_SCOPES, type Principal, unauthenticated } from '../api-keys/api-key.service.js';
import type { AccountService } from '../accounts/account.service.js';
import type { SessionRepository } from './session.repository.js';

/** The cookie that carries the session id. */
export const SESSION_COOKIE = 'mg_session';
/** The header a cookie-authenticated request that changes something must carry. */
export const CSRF_HEADER = 'x-csrf-token';

/** 256 random bits, base64url: login tokens, session ids and CSRF tokens. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const newToken = () => randomBytes(32).toString('base64url');

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
}

/**
 * Sign-in to the account area for installs without an identity provider. The operator makes a
 * single-use login link; the page exchanges its token for a session whose id travels only in an
 * HttpOnly cookie. Tokens and session ids are stored as HMAC-SHA-256 with the server's pepper (each
 * kind with its own label), like API keys, so a copy of the tables signs nobody in.
 */
export class SessionService {
  constructor(
    private readonly repo: SessionRepository,
    private readonly accounts: AccountService,
    private readonly settings: SessionSettings,
  ) {}

  get sessionSeconds(): number {
    return Math.max(1, Math.floor(this.settings.sessionHours * 3600));
  }

  /**
   * A link to the account page that signs the account in once, within LOGIN_LINK_MINUTES. The token
   * is in the fragment, which browsers never send to a server, so it stays out of logs and Referer.
   */
  async createLoginLink(accountId: string): Promise<{ url: string; expiresAt: Date }> {
    if (!isUuid(accountId)) throw new AppError('NOT_FOUND', 'No such account.');
    await this.accounts.view(accountId);
    const token = newToken();
    const expiresAt = await this.repo.createLoginLink(accountId, this.hash('login-link', token), this.settings.loginLinkMinutes);
    return { url: `${this.settings.publicUrl}/account/#login=${token}`, expiresAt };
  }

  /**
   * Spends a login link's token for a new session. Unknown, used and expired tokens are the same
   * 401, so nobody can tell them apart. The returned `sessionId` goes into the cookie and nowhere else.
   */
  async start(token: unknown): Promise<SessionView & { sessionId: string }> {
    if (typeof token !== 'string' || !TOKEN.test(token)) throw this.badLink();
    const sessionId = newToken();
    const csrfToken = newToken();
    const started = await this.repo.exchange(this.hash('login-link', token), this.hash('session', sessionId), csrfToken, this.settings.sessionHours);
    if (!started) throw this.badLink();
    return { sessionId, csrfToken, expiresAt: started.expiresAt, account: { id: started.accountId, name: started.accountName } };
  }

  /** The live session behind a cookie's id, with its principal; 401 UNAUTHENTICATED when there is none. */
  async resolve(sessionId: string): Promise<SessionView & { principal: Principal }> {
    const live = TOKEN.test(sessionId) ? await this.repo.findLive(this.hash('session', sessionId)) : null;
    if (!live) throw unauthenticated();
    return {
      csrfToken: live.csrfToken,
      expiresAt: live.expiresAt,
      account: { id: live.accountId, name: live.accountName },
      // As a signed-in OpenID Connect user: every scope, the account's roles and membership.
      principal: {
        accountId: live.accountId,
        apiKeyId: null,
        scopes: new Set(API_KEY_SCOPES),
        isMember: live.isMember,
        roles: new Set(live.roles),
        via: 'session',
      },
    };
  }

  /** Ends the session on the server (idempotent): its cookie no longer works, wherever it was copied. */
  async end(sessionId: string): Promise<void> {
    if (TOKEN.test(sessionId)) await this.repo.revoke(this.hash('session', sessionId));
  }

  private hash(label: 'login-link' | 'session', value: string): Buffer {
    return createHmac('sha256', this.settings.pepper).update(`mediagate ${label}:`).update(value).digest();
  }

  private badLink() {
    return new AppError('UNAUTHENTICATED', 'This login link is not valid: it is unknown, already used or expired. Ask for a new one.');
  }
}

/** Whether the presented CSRF token is the session's, compared in constant time. */
export function csrfMatches(expected: string, presented: string | undefined): boolean {
  if (!presented) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}
