import { isUuid, textArray } from '../../db/sql-values.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../errors.js';
import { ApiKey } from './api-key.entity.js';
import { generateKey, hashKey, keyMatches, parseKey } from './api-key.format.js';

/** What a key may do. A key gets every scope unless created with fewer. */
export const API_KEY_SCOPES = ['parse', 'transcribe', 'read', 'keys'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

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
}


/** The same error for every way a key can be wrong, so a revoked key cannot be told from an unknown one. */
export const unauthenticated = () => new AppError('UNAUTHENTICATED');

export class ApiKeyService {
  constructor(
    private readonly em: () => EntityManager,
    private readonly pepper: string,
  ) {}

  /** Creates a key; the returned `key` is the only time the secret exists outside the caller's hands. */
  async create(accountId: string, name: string | null | undefined, scopes?: readonly string[]): Promise<{ key: string; apiKey: ApiKey }> {
    const problems: Record<string, string> = {};
    const cleanName = (name ?? 'default').trim();
    if (!cleanName || cleanName.length > 100) problems.name = 'must be 1 to 100 characters';
    const wanted = scopes && scopes.length ? [...new Set(scopes)] : [...API_KEY_SCOPES];
    const unknown = wanted.filter((s) => !(API_KEY_SCOPES as readonly string[]).includes(s));
    if (unknown.length) problems.scopes = `unknown scope(s) ${unknown.join(', ')}; allowed: ${API_KEY_SCOPES.join(', ')}`;
    if (Object.keys(problems).length) throw new AppError('INVALID_INPUT', 'The key is not valid.', problems);
    const { key, publicId } = generateKey();
    const em = this.em();
    const apiKey = em.create(ApiKey, {
      accountId,
      name: cleanName,
      publicId,
      secretHash: hashKey(key, this.pepper),
      last4: key.slice(-4),
      scopes: wanted,
    });
    await em.flush();
    return { key, apiKey };
  }

  async list(accountId: string): Promise<ApiKey[]> {
    return this.em().find(ApiKey, { accountId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  }

  /**
   * The keys of several accounts in one query, oldest first (the secret's hash is a lazy property,
   * so it is not even read). With `onlyAccount`, only that account's keys are read.
   */
  async listForAccounts(accountIds: readonly string[], onlyAccount: string | null): Promise<ApiKey[]> {
    const wanted = accountIds.filter((id) => isUuid(id) && (onlyAccount === null || id === onlyAccount));
    if (!wanted.length) return [];
    return this.em().find(ApiKey, { accountId: { $in: wanted } }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  }

  /** Revokes a key (idempotent). With `accountId`, only that account's keys are visible. */
  async revoke(keyId: string, accountId?: string): Promise<ApiKey> {
    const em = this.em();
    const apiKey = isUuid(keyId) ? await em.findOne(ApiKey, accountId ? { id: keyId, accountId } : { id: keyId }) : null;
    if (!apiKey) throw new AppError('NOT_FOUND', 'No such API key.');
    if (!apiKey.revokedAt) {
      apiKey.revokedAt = new Date();
      await em.flush();
    }
    return apiKey;
  }

  /**
   * Resolves a bearer key to its principal in one query (key, account membership), with no cache,
   * so a revocation holds from the very next request on every instance.
   */
  async authenticate(presented: string): Promise<Principal> {
    const parsed = parseKey(presented);
    if (!parsed) throw unauthenticated();
    const rows = await this.em().getConnection().execute<
      { id: string; account_id: string; secret_hash: Buffer; scopes: string[] | string; roles: string[] | string; revoked: boolean; member: boolean; stale: boolean }[]
    >(
      `select k.id, k.account_id, k.secret_hash, k.scopes, a.roles, k.revoked_at is not null as revoked,
              coalesce(m.status = 'active' and m.period_end > now(), false) as member,
              (k.last_used_at is null or k.last_used_at < now() - interval '1 minute') as stale
         from api_key k join account a on a.id = k.account_id left join membership m on m.account_id = k.account_id
        where k.public_id = ?`,
      [parsed.publicId],
    );
    const row = rows[0];
    if (!row || row.revoked || !keyMatches(parsed.key, Buffer.from(row.secret_hash), this.pepper)) throw unauthenticated();
    if (row.stale) void this.touch(row.id);
    return {
      accountId: row.account_id,
      apiKeyId: row.id,
      scopes: new Set(textArray(row.scopes)),
      isMember: row.member,
      roles: new Set(textArray(row.roles)),
      via: 'api_key',
    };
  }

  /** last_used_at is kept to the minute: enough for people, and no write on every request. */
  private async touch(id: string): Promise<void> {
    try {
      await this.em().getConnection().execute(`update api_key set last_used_at = now() where id = ?`, [id]);
    } catch {
      // Best effort: a missed timestamp must never fail a request.
    }
  }
}
