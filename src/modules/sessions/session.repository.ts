import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { textArray } from '../../db/sql-values.js';

/** A session that is neither expired nor revoked, with what the principal needs. */
export interface LiveSession {
  /** The session's row id (what its end is announced with), never its secret. */
  id: string;
  accountId: string;
  accountName: string;
  csrfToken: string;
  expiresAt: Date;
  roles: string[];
  isMember: boolean;
}

/** A session just opened (or the account a login link would open one for). */
export interface StartedSession {
  accountId: string;
  accountName: string;
  expiresAt: Date;
}

/** A session about to be opened, and the browser's session it replaces (null: none). */
export interface NewSession {
  sessionHash: Buffer;
  csrfToken: string;
  hours: number;
  replacingHash: Buffer | null;
}

const toDate = (v: Date | string) => new Date(v);

/** Within a statement that opened session `s`: ends the replaced session, only if `s` was opened. */
const END_REPLACED = `update account_session set revoked_at = now()
   where session_hash = ? and revoked_at is null and exists (select 1 from s) returning id`;

/**
 * Login links and sessions, in single statements: the link is spent and the session made in one
 * statement (two exchanges of the same link cannot both succeed), and a request's session, account
 * and membership are read in one query. Times come from the database's clock, as for jobs.
 */
export class SessionRepository {
  constructor(private readonly em: () => EntityManager) {}

  private conn() {
    return this.em().getConnection();
  }

  async createLoginLink(accountId: string, tokenHash: Buffer, minutes: number): Promise<Date> {
    const rows = await this.conn().execute<{ expires_at: Date | string }[]>(
      `insert into login_link (id, account_id, token_hash, expires_at)
       values (?, ?, ?, now() + make_interval(secs => ?)) returning expires_at`,
      [randomUUID(), accountId, tokenHash, minutes * 60],
    );
    return toDate(rows[0].expires_at);
  }

  /** The account an unused, unexpired link would sign in; null when the link cannot be used. Spends nothing. */
  async peek(tokenHash: Buffer): Promise<StartedSession | null> {
    const rows = await this.conn().execute<{ account_id: string; name: string; expires_at: Date | string }[]>(
      `select l.account_id, a.name, l.expires_at from login_link l join account a on a.id = l.account_id
        where l.token_hash = ? and l.used_at is null and l.expires_at > now()`,
      [tokenHash],
    );
    const r = rows[0];
    return r ? { accountId: r.account_id, accountName: r.name, expiresAt: toDate(r.expires_at) } : null;
  }

  /**
   * Spends an unused, unexpired link and opens a session for its account, ending the session it
   * replaces; null when the link cannot be used, and then nothing is spent or ended.
   */
  async exchange(tokenHash: Buffer, session: NewSession): Promise<StartedSession | null> {
    const rows = await this.conn().execute<{ account_id: string; name: string; expires_at: Date | string }[]>(
      `with link as (
         update login_link set used_at = now()
          where token_hash = ? and used_at is null and expires_at > now()
          returning id, account_id
       ), s as (
         insert into account_session (id, account_id, session_hash, csrf_token, login_link_id, expires_at)
         select ?, account_id, ?, ?, id, now() + make_interval(secs => ?) from link
         returning account_id, expires_at
       ), ended as (${END_REPLACED})
       select s.account_id, a.name, s.expires_at from s join account a on a.id = s.account_id`,
      [tokenHash, randomUUID(), session.sessionHash, session.csrfToken, session.hours * 3600, session.replacingHash],
    );
    const r = rows[0];
    return r ? { accountId: r.account_id, accountName: r.name, expiresAt: toDate(r.expires_at) } : null;
  }

  /**
   * Opens a session for an account signed in with an ID token, which opens one session only (its
   * hash is unique), ending the session it replaces; null when the token was already used, and then
   * nothing is ended.
   */
  async open(accountId: string, idTokenHash: Buffer, session: NewSession): Promise<StartedSession | null> {
    const rows = await this.conn().execute<{ account_id: string; name: string; expires_at: Date | string }[]>(
      `with s as (
         insert into account_session (id, account_id, session_hash, csrf_token, id_token_hash, expires_at)
         values (?, ?, ?, ?, ?, now() + make_interval(secs => ?))
         on conflict (id_token_hash) do nothing
         returning account_id, expires_at
       ), ended as (${END_REPLACED})
       select s.account_id, a.name, s.expires_at from s join account a on a.id = s.account_id`,
      [randomUUID(), accountId, session.sessionHash, session.csrfToken, idTokenHash, session.hours * 3600, session.replacingHash],
    );
    const r = rows[0];
    return r ? { accountId: r.account_id, accountName: r.name, expiresAt: toDate(r.expires_at) } : null;
  }

  /** The live session with this hash, its account and membership; null when unknown, expired or revoked. */
  async findLive(sessionHash: Buffer): Promise<LiveSession | null> {
    const rows = await this.conn().execute<
      {
        id: string;
        account_id: string;
        name: string;
        csrf_token: string;
        expires_at: Date | string;
        roles: string[] | string;
        member: boolean;
      }[]
    >(
      `select s.id, s.account_id, a.name, s.csrf_token, s.expires_at, a.roles,
              coalesce(m.status = 'active' and m.period_end > now(), false) as member
         from account_session s join account a on a.id = s.account_id
         left join membership m on m.account_id = s.account_id
        where s.session_hash = ? and s.revoked_at is null and s.expires_at > now()`,
      [sessionHash],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      id: r.id,
      accountId: r.account_id,
      accountName: r.name,
      csrfToken: r.csrf_token,
      expiresAt: toDate(r.expires_at),
      roles: textArray(r.roles),
      isMember: r.member,
    };
  }

  /** Ends a session (idempotent); true when a live one was ended. */
  async revoke(sessionHash: Buffer): Promise<boolean> {
    const rows = await this.conn().execute<{ id: string }[]>(
      `update account_session set revoked_at = now() where session_hash = ? and revoked_at is null returning id`,
      [sessionHash],
    );
    return rows.length > 0;
  }
}
