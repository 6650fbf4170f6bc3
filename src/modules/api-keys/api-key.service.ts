import { apiKeyPolicy, noSuchKey } from './api-key.policy.js';
import type { Principal } from '../principal.js';
import { isUuid, textArray } from '../../db/sql-values.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import type { HotPool, Statement } from '../../db/hot-pool.js';
import { AppError } from '../../errors.js';
import type { ApiKeyCache, KeyRecord } from './api-key.cache.js';
import { ApiKey } from './api-key.entity.js';
import { generateKey, hashKey, keyMatches, parseKey, type ParsedKey } from './api-key.format.js';

import { API_KEY_SCOPES } from '../principal.js';
export { API_KEY_SCOPES };
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];
/** The account area's session: every scope (its page creates and revokes keys, reads the webhook secret). */
export const SESSION_SCOPES: readonly string[] = API_KEY_SCOPES;
/** The scopes that make or replace credentials: API keys and the webhook signing secret. */
export const CREDENTIAL_SCOPES: readonly string[] = ['keys'];
/**
 * A frontend's OpenID Connect token sent as the Bearer token: a session's scopes less those that
 * make credentials, so a leaked token cannot leave a lasting key or replace the webhook secret.
 */
export const OIDC_BEARER_SCOPES: readonly string[] = SESSION_SCOPES.filter((s) => !CREDENTIAL_SCOPES.includes(s));

export type { Principal } from '../principal.js';

/** The same error for every way a key can be wrong, so a revoked key cannot be told from an unknown one. */
export const unauthenticated = () => new AppError('UNAUTHENTICATED');

/** A key's row as authentication reads it: the key, its account's roles, its membership. */
const LOOKUP: Statement = {
  name: 'api_key_lookup',
  text: `select k.id, k.account_id, k.secret_hash, k.scopes, a.roles, k.revoked_at is not null as revoked,
                coalesce(m.status = 'active', false) as active, m.period_end, k.last_used_at
           from api_key k join account a on a.id = k.account_id left join membership m on m.account_id = k.account_id
          where k.public_id = $1::text`,
};

/**
 * The condition every statement that hands out power ends with: the calling key (`param`, its
 * placeholder; null for a session, an OIDC user or the operator) is not revoked. A key cache that
 * has not heard of a revocation yet lets the key read, never mint a key or a secret.
 */
export const callerNotRevoked = (param: string) =>
  `not exists (select 1 from api_key where id = ${param}::uuid and revoked_at is not null)`;

/**
 * Within a key's creation: locks the account's row against other creations (FOR NO KEY UPDATE: the
 * rows that merely reference the account, jobs and entries, are not held up), and says whether the
 * calling key (null: none) is revoked. Its live keys are counted by the next statement, whose
 * snapshot, taken after the lock was granted, sees the keys the creations before it committed.
 */
const LOCK_FOR_NEW_KEY = `select exists (select 1 from api_key where id = ? and revoked_at is not null) as caller_revoked
   from account a where a.id = ? for no key update of a`;
const LIVE_KEYS = `select count(*)::int as live from api_key where account_id = ? and revoked_at is null`;
// The scopes come as a JSON array: the ORM would spread a list into several parameters.
const CREATE = `insert into api_key (id, account_id, name, public_id, secret_hash, last4, scopes)
  values (?, ?, ?, ?, ?, ?, array(select jsonb_array_elements_text(cast(? as jsonb))))
  returning id, account_id, name, public_id, last4, scopes, created_at, last_used_at, revoked_at`;

interface CreatedRow {
  id: string;
  account_id: string;
  name: string;
  public_id: string;
  last4: string;
  scopes: string[] | string;
  created_at: Date | string;
  last_used_at: Date | string | null;
  revoked_at: Date | string | null;
}

/** last_used_at is kept to the minute: enough for people, and no write on every request. */
const TOUCH: Statement = {
  name: 'api_key_touch',
  text: `update api_key set last_used_at = now() where id = any($1::uuid[]) and (last_used_at is null or last_used_at < now() - interval '1 minute')`,
};
const TOUCH_EVERY_MS = 60_000;
/** Keys used meanwhile are written together, at most this long after their use, off every request's path. */
const TOUCH_DELAY_MS = 500;

interface KeyRow {
  id: string;
  account_id: string;
  secret_hash: Buffer;
  scopes: string[] | string;
  roles: string[] | string;
  revoked: boolean;
  active: boolean;
  period_end: Date | null;
  last_used_at: Date | null;
}

export class ApiKeyService {
  /** Lookups under way, so that a burst of requests with one uncached key reads it once (with the cache's mark when each began). */
  private readonly lookups = new Map<string, { mark: number; record: Promise<KeyRecord | null> }>();
  /** Keys whose last_used_at is due, and the timer that writes them. */
  private readonly used = new Set<string>();
  private touchTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly em: () => EntityManager,
    private readonly pepper: string,
    private readonly hot: HotPool,
    private readonly cache: ApiKeyCache,
    /** Live keys one account may hold (API_KEYS_PER_ACCOUNT). */
    private readonly maxPerAccount = Number.POSITIVE_INFINITY,
  ) {}

  /**
   * Creates a key for `accountId` (see apiKeyPolicy.create); the returned `key` is the only time the
   * secret exists outside the caller's hands. When the calling key has been revoked, even on an
   * instance whose cache has not heard yet, nothing is written: 401. An account holding
   * API_KEYS_PER_ACCOUNT live keys gets no more: 403 FORBIDDEN (creations for one account are
   * serialized, so concurrent ones cannot pass the count together).
   */
  async create(
    principal: Principal,
    accountId: string,
    name?: string | null,
    scopes?: readonly string[] | null,
  ): Promise<{ key: string; apiKey: ApiKey }> {
    const wanted = apiKeyPolicy.create(principal, accountId, scopes);
    const callerKeyId = principal.apiKeyId;
    const problems: Record<string, string> = {};
    const cleanName = (name ?? 'default').trim();
    if (!cleanName || cleanName.length > 100) problems.name = 'must be 1 to 100 characters';
    const unknown = wanted.filter((s) => !(API_KEY_SCOPES as readonly string[]).includes(s));
    if (unknown.length) problems.scopes = `unknown scope(s) ${unknown.join(', ')}; allowed: ${API_KEY_SCOPES.join(', ')}`;
    if (Object.keys(problems).length) throw new AppError('INVALID_INPUT', 'The key is not valid.', problems);
    if (!isUuid(accountId)) throw new AppError('NOT_FOUND', 'No such account.');
    const { key, publicId } = generateKey();
    const row = await this.em().transactional(async (em) => {
      const [account] = await em.execute<{ caller_revoked: boolean }[]>(LOCK_FOR_NEW_KEY, [callerKeyId, accountId]);
      if (!account) throw new AppError('NOT_FOUND', 'No such account.');
      if (account.caller_revoked) throw this.callerRevoked(callerKeyId);
      const [{ live }] = await em.execute<{ live: number }[]>(LIVE_KEYS, [accountId]);
      if (live >= this.maxPerAccount) {
        throw new AppError(
          'FORBIDDEN',
          `An account may hold at most ${this.maxPerAccount} live API keys; revoke one before creating another.`,
          { limit: this.maxPerAccount, live },
        );
      }
      const [created] = await em.execute<CreatedRow[]>(CREATE, [
        randomUUID(),
        accountId,
        cleanName,
        publicId,
        hashKey(key, this.pepper),
        key.slice(-4),
        JSON.stringify(wanted),
      ]);
      return created;
    });
    const apiKey = Object.assign(new ApiKey(), {
      id: row.id,
      accountId: row.account_id,
      name: row.name,
      publicId: row.public_id,
      last4: row.last4,
      scopes: textArray(row.scopes),
      createdAt: new Date(row.created_at),
      lastUsedAt: row.last_used_at ? new Date(row.last_used_at) : null,
      revokedAt: row.revoked_at ? new Date(row.revoked_at) : null,
    });
    return { key, apiKey };
  }

  /** The refusal of a caller whose key turned out revoked in the statement itself: the same 401 as any bad key; this instance forgets the key. */
  callerRevoked(callerKeyId: string | null): AppError {
    if (callerKeyId) this.cache.forget({ apiKeyId: callerKeyId });
    return unauthenticated();
  }

  /** An account's keys, oldest first, revoked ones included (see apiKeyPolicy.list). */
  async list(principal: Principal, accountId: string): Promise<ApiKey[]> {
    apiKeyPolicy.list(principal, accountId);
    return this.em().find(ApiKey, { accountId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  }

  /**
   * The keys of several accounts in one query, oldest first (the secret's hash is a lazy property,
   * so it is not even read). With `onlyAccount`, only that account's keys are read.
   */
  async listForAccounts(principal: Principal, accountIds: readonly string[]): Promise<ApiKey[]> {
    const onlyAccount = apiKeyPolicy.listMany(principal);
    const wanted = accountIds.filter((id) => isUuid(id) && (onlyAccount === null || id === onlyAccount));
    if (!wanted.length) return [];
    return this.em().find(ApiKey, { accountId: { $in: wanted } }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  }

  /** Revokes a key (idempotent); another account's key is NOT_FOUND but for admins (see apiKeyPolicy.revoke). */
  async revoke(principal: Principal, keyId: string): Promise<ApiKey> {
    const accountId = apiKeyPolicy.revoke(principal);
    const em = this.em();
    const apiKey = isUuid(keyId) ? await em.findOne(ApiKey, accountId ? { id: keyId, accountId } : { id: keyId }) : null;
    if (!apiKey) throw noSuchKey();
    if (!apiKey.revokedAt) {
      apiKey.revokedAt = new Date();
      await em.flush();
    }
    // This instance refuses it at once; the others when the database's notification reaches them.
    this.cache.forget({ apiKeyId: apiKey.id });
    return apiKey;
  }

  /**
   * Resolves a bearer key to its principal: the key's record comes from the cache or one query (key,
   * account roles, membership), and the secret is checked against its hash every time. Membership
   * is judged now, against the period's end. A revoked key the cache has not heard of yet may still
   * read, but never hold credits: the hold's statement checks revocation itself.
   */
  async authenticate(presented: string | ParsedKey): Promise<Principal> {
    const parsed = typeof presented === 'string' ? parseKey(presented) : presented;
    if (!parsed) throw unauthenticated();
    const record = this.cache.get(parsed.publicId) ?? (await this.lookup(parsed.publicId));
    if (!record || record.revoked || !keyMatches(parsed.key, record.secretHash, this.pepper)) throw unauthenticated();
    const now = Date.now();
    if (now - record.touchedAt >= TOUCH_EVERY_MS) {
      record.touchedAt = now;
      this.used.add(record.keyId);
      this.touchTimer ??= setTimeout(() => void this.touch(), TOUCH_DELAY_MS).unref();
    }
    return {
      accountId: record.accountId,
      apiKeyId: record.keyId,
      scopes: record.scopes,
      isMember: record.membershipActive && record.periodEnd !== null && record.periodEnd > now,
      roles: record.roles,
      via: 'api_key',
    };
  }

  /** Forgets a key this instance learned is revoked (a refused hold), so its next request is refused before any work. */
  forgetKey(apiKeyId: string): void {
    this.cache.forget({ apiKeyId });
  }

  /** Stops listening for changes and writes the last uses (the process is closing). */
  async close(): Promise<void> {
    this.cache.close();
    await this.touch();
  }

  private lookup(publicId: string): Promise<KeyRecord | null> {
    const pending = this.lookups.get(publicId);
    // A lookup that began before a change was notified may have read the key as it was: not joined.
    if (pending && pending.mark === this.cache.mark()) return pending.record;
    const started = { mark: this.cache.mark(), record: this.read(publicId) };
    started.record = started.record.finally(() => this.lookups.get(publicId) === started && this.lookups.delete(publicId));
    this.lookups.set(publicId, started);
    return started.record;
  }

  private async read(publicId: string): Promise<KeyRecord | null> {
    const mark = this.cache.mark();
    const [row] = await this.hot.query<KeyRow>(LOOKUP, [publicId]);
    if (!row) return null;
    const record: KeyRecord = {
      keyId: row.id,
      accountId: row.account_id,
      secretHash: Buffer.from(row.secret_hash),
      scopes: new Set(textArray(row.scopes)),
      roles: new Set(textArray(row.roles)),
      membershipActive: row.active,
      periodEnd: row.period_end ? new Date(row.period_end).getTime() : null,
      revoked: row.revoked,
      touchedAt: row.last_used_at ? new Date(row.last_used_at).getTime() : 0,
    };
    this.cache.store(publicId, record, mark);
    return record;
  }

  private async touch(): Promise<void> {
    if (this.touchTimer) clearTimeout(this.touchTimer);
    this.touchTimer = null;
    if (!this.used.size) return;
    const ids = [...this.used];
    this.used.clear();
    try {
      await this.hot.query(TOUCH, [ids]);
    } catch {
      // Best effort: a missed timestamp must never fail a request.
    }
  }
}
