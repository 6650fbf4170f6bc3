import { accountPolicy } from './account.policy.js';
import { isUuid, textArray } from '../../db/sql-values.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { AppError } from '../../errors.js';
import { OIDC_BEARER_SCOPES, type Principal } from '../api-keys/api-key.service.js';
import type { OidcIdentity } from './oidc.verifier.js';
import { decodeCursor, pageSize, toPage, type Page } from '../paging.js';
import type { LedgerService } from '../credits/ledger.service.js';
import { CreditBalance } from '../credits/credit-balance.entity.js';
import { ACCOUNT_ROLES, Account, type AccountRole } from './account.entity.js';
import { Membership } from './membership.entity.js';

export interface CreateAccountInput {
  name: string;
  roles?: string[];
  email?: string | null;
  credits?: number;
  membershipDays?: number;
}

/** What `me` and the CLI show of an account. */
export interface AccountView {
  id: string;
  name: string;
  email: string | null;
  createdAt: Date;
  membership: { plan: string; status: string; periodEnd: Date; active: boolean } | null;
  credits: { available: number; held: number };
}

interface ViewRow {
  id: string;
  name: string;
  email: string | null;
  created_at: string | Date;
  plan: string | null;
  status: string | null;
  period_end: string | Date | null;
  active: boolean;
  available: string | number;
  held: string | number;
}

const VIEW_SELECT = `select a.id, a.name, a.email, a.created_at, m.plan, m.status, m.period_end,
       coalesce(m.status = 'active' and m.period_end > now(), false) as active,
       coalesce(b.available, 0) as available, coalesce(b.held, 0) as held
  from account a
  left join membership m on m.account_id = a.id
  left join credit_balance b on b.account_id = a.id`;

function toView(r: ViewRow): AccountView {
  return {
    id: r.id,
    name: r.name,
    email: r.email,
    createdAt: new Date(r.created_at),
    membership: r.status ? { plan: r.plan!, status: r.status, periodEnd: new Date(r.period_end!), active: r.active } : null,
    credits: { available: Number(r.available), held: Number(r.held) },
  };
}

/** Accounts and memberships: the operator's and the account area's side of the data. */
export class AccountService {
  constructor(
    private readonly em: () => EntityManager,
    private readonly ledger: LedgerService,
    /** Where account lists are read (a replica, DATABASE_READ_URL); balances always come from the primary. */
    private readonly readEm: () => EntityManager = em,
  ) {}

  /** A new account, with its initial credits and membership (admins: the operator's command line). */
  async create(principal: Principal, input: CreateAccountInput): Promise<AccountView> {
    accountPolicy.administer(principal, 'create accounts');
    const name = input.name?.trim();
    const problems: Record<string, string> = {};
    if (!name || name.length > 200) problems.name = 'must be 1 to 200 characters';
    if (input.email != null && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(input.email)) problems.email = 'must be an email address';
    if (input.credits !== undefined && (!Number.isSafeInteger(input.credits) || input.credits < 0))
      problems.credits = 'must be a whole number ≥ 0';
    if (
      input.membershipDays !== undefined &&
      (!Number.isInteger(input.membershipDays) || input.membershipDays < 0 || input.membershipDays > 3660)
    )
      problems.membershipDays = 'must be a whole number of days from 0 to 3660';
    const roles = [...new Set(input.roles ?? [])];
    const badRoles = roles.filter((r) => !(ACCOUNT_ROLES as readonly string[]).includes(r));
    if (badRoles.length) problems.roles = `unknown role(s) ${badRoles.join(', ')}; allowed: ${ACCOUNT_ROLES.join(', ')}`;
    if (Object.keys(problems).length) throw new AppError('INVALID_INPUT', 'The account is not valid.', problems);

    const account = await this.em().transactional(async (em) => {
      const created = em.create(Account, { name: name!, email: input.email ?? null, roles: roles as AccountRole[] });
      // The entities carry plain ids, not relations, so the parent row is flushed first.
      await em.flush();
      // The balance row exists from the start: the ledger's conditional updates need a row to lock.
      em.create(CreditBalance, { accountId: created.id });
      if (input.membershipDays) {
        em.create(Membership, {
          accountId: created.id,
          status: 'active',
          periodEnd: new Date(Date.now() + input.membershipDays * 86_400_000),
        });
      }
      return created;
    });
    if (input.credits) await this.ledger.grant(account.id, input.credits, 'initial credits');
    return this.load(account.id);
  }

  /** The account with its membership and balance, in one query (it serves `me` on every page load): its holder's, or any for analysts and admins. */
  async view(principal: Principal, accountId: string): Promise<AccountView> {
    accountPolicy.read(principal, accountId);
    return this.load(accountId);
  }

  /** Adds credits to an account's available balance (admins: the operator's command line); returns the new available balance. */
  async grant(principal: Principal, accountId: string, amount: number, reason: string | null): Promise<number> {
    accountPolicy.administer(principal, 'grant credits');
    await this.load(accountId);
    return this.ledger.grant(accountId, amount, reason);
  }

  private async load(accountId: string): Promise<AccountView> {
    if (!isUuid(accountId)) throw new AppError('NOT_FOUND', 'No such account.');
    const rows = await this.em().getConnection().execute<ViewRow[]>(`${VIEW_SELECT} where a.id = ?`, [accountId]);
    if (!rows[0]) throw new AppError('NOT_FOUND', 'No such account.');
    return toView(rows[0]);
  }

  /**
   * Several accounts as `view` shows them, in one query, in no particular order; ids that are not
   * accounts are left out. With `onlyAccount`, nothing but that account is read.
   */
  async viewMany(principal: Principal, ids: readonly string[]): Promise<AccountView[]> {
    const onlyAccount = accountPolicy.readMany(principal);
    const wanted = ids.filter((id) => isUuid(id) && (onlyAccount === null || id === onlyAccount));
    if (!wanted.length) return [];
    const rows = await this.em().getConnection().execute<ViewRow[]>(`${VIEW_SELECT} where a.id in (?)`, [wanted]);
    return rows.map(toView);
  }

  /** Every account, newest first, for admins and analysts. */
  async list(principal: Principal, first: number | null | undefined, after: string | null | undefined): Promise<Page<AccountView>> {
    accountPolicy.list(principal);
    const size = pageSize(first);
    const cursor = after ? decodeCursor(after) : null;
    if (cursor && !isUuid(cursor.id))
      throw new AppError('INVALID_INPUT', 'after is not a cursor from this API.', { after: 'invalid cursor' });
    const rows = await this.readEm()
      .getConnection()
      .execute<ViewRow[]>(
        `${VIEW_SELECT} ${cursor ? 'where (a.created_at, a.id) < (?::timestamptz, ?::uuid)' : ''} order by a.created_at desc, a.id desc limit ?`,
        [...(cursor ? [cursor.createdAt.toISOString(), cursor.id] : []), size + 1],
      );
    if (this.readEm !== this.em && rows.length) {
      // A lagging replica shows fewer accounts, never an old balance: balances are re-read on the primary.
      const live = await this.em()
        .getConnection()
        .execute<{ account_id: string; available: string; held: string }[]>(
          `select account_id, available, held from credit_balance where account_id in (${rows.map(() => '?').join(', ')})`,
          rows.map((r) => r.id),
        );
      const byId = new Map(live.map((b) => [b.account_id, b]));
      for (const r of rows) Object.assign(r, { available: byId.get(r.id)?.available ?? 0, held: byId.get(r.id)?.held ?? 0 });
    }
    return toPage(rows.map(toView), size, (a) => a);
  }

  /**
   * The principal of a signed-in frontend user: the account linked to the identity, made on first
   * sign-in (no credits, no membership), with a session's scopes but none that makes credentials.
   */
  async principalForOidc(identity: OidcIdentity): Promise<Principal> {
    const conn = this.em().getConnection();
    await conn.execute(
      `with a as (
         insert into account (id, name, email, oidc_subject) values (?, ?, ?, ?)
         on conflict (oidc_subject) do nothing returning id
       )
       insert into credit_balance (account_id) select id from a`,
      [randomUUID(), identity.name ?? identity.email ?? 'Account', identity.email, identity.subject],
    );
    const rows = await conn.execute<{ id: string; roles: string[] | string; member: boolean }[]>(
      `select a.id, a.roles, coalesce(m.status = 'active' and m.period_end > now(), false) as member
         from account a left join membership m on m.account_id = a.id where a.oidc_subject = ?`,
      [identity.subject],
    );
    const r = rows[0];
    return {
      accountId: r.id,
      apiKeyId: null,
      scopes: new Set(OIDC_BEARER_SCOPES),
      isMember: r.member,
      roles: new Set(textArray(r.roles)),
      via: 'oidc',
    };
  }

  /** Starts or extends the membership to `until` (admins: the operator's command line). */
  async setMembership(principal: Principal, accountId: string, until: Date): Promise<AccountView> {
    accountPolicy.administer(principal, 'set memberships');
    if (Number.isNaN(until.getTime()))
      throw new AppError('INVALID_INPUT', 'until must be an ISO-8601 date', { until: 'must be an ISO-8601 date' });
    await this.load(accountId);
    const em = this.em();
    const existing = await em.findOne(Membership, { accountId });
    if (existing) {
      existing.status = 'active';
      existing.periodEnd = until;
    } else {
      em.create(Membership, { accountId, status: 'active', periodEnd: until });
    }
    await em.flush();
    return this.load(accountId);
  }

  /** Ends the membership now (admins: the operator's command line). */
  async cancelMembership(principal: Principal, accountId: string): Promise<AccountView> {
    accountPolicy.administer(principal, 'end memberships');
    await this.load(accountId);
    const em = this.em();
    const existing = await em.findOne(Membership, { accountId });
    if (existing) {
      existing.status = 'canceled';
      await em.flush();
    }
    return this.load(accountId);
  }
}
