import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../errors.js';
import { callerNotRevoked } from '../api-keys/api-key.service.js';

/** The prefix Standard Webhooks gives signing secrets; the rest is the key, base64. */
const PREFIX = 'whsec_';

/** Ciphertexts bound to their account (its id is the AES-GCM associated data) start with this; older ones are bare. */
const BOUND = Buffer.from('v2:');

/** An account's signing secret and when it was made. */
export interface WebhookSecret {
  secret: string;
  createdAt: Date;
}

export interface WebhookSecretLog {
  error(obj: object, msg: string): void;
}

/** A stored secret that does not decrypt here (another pepper, or a row copied from another account): kept, never replaced unasked. */
export class UnreadableWebhookSecret extends AppError {
  constructor() {
    super(
      'INTERNAL_ERROR',
      'The webhook signing secret cannot be read by this server (its configuration does not match the one that stored it). It was kept as it is; rotateWebhookSecret replaces it.',
    );
  }
}

interface SecretRow {
  secret_enc: Buffer;
  created_at: Date | string;
}

/**
 * Each account's webhook signing secret. The gateway must sign with it and the holder must be able
 * to read it, so it cannot be hashed: it is kept encrypted (AES-256-GCM, the account's id as
 * associated data) under a key derived from the server's pepper, never in clear. A secret that does
 * not decrypt is an error, logged, and left as it is: only its owner's rotation replaces it.
 */
export class WebhookSecretRepository {
  private readonly key: Buffer;

  constructor(
    private readonly em: () => EntityManager,
    pepper: string,
    private readonly log: WebhookSecretLog,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', pepper, 'mediagate', 'webhook signing secrets', 32));
  }

  /** The account's secret, made on first use; UnreadableWebhookSecret when the stored one does not decrypt here. */
  async get(accountId: string): Promise<WebhookSecret> {
    const rows = await this.conn().execute<SecretRow[]>(`select secret_enc, created_at from webhook_secret where account_id = ?`, [
      accountId,
    ]);
    const row = rows[0];
    if (!row) return (await this.store(accountId, null, false))!;
    const stored = Buffer.from(row.secret_enc);
    const opened = this.open(accountId, stored);
    if (!opened) {
      this.log.error({ accountId }, 'webhook secret does not decrypt: is API_KEY_PEPPER the one it was encrypted with?');
      throw new UnreadableWebhookSecret();
    }
    if (opened.unbound) {
      // Sealed again, bound to its account, unless a rotation replaced it meanwhile.
      await this.conn().execute(`update webhook_secret set secret_enc = ? where account_id = ? and secret_enc = ?`, [
        this.seal(accountId, opened.secret),
        accountId,
        stored,
      ]);
    }
    return { secret: opened.secret, createdAt: new Date(row.created_at) };
  }

  /**
   * A new secret; the old one stops working at once (deliveries still retrying are signed with the
   * new one). Null, with nothing written, when `callerKeyId` has been revoked.
   */
  rotate(accountId: string, callerKeyId: string | null): Promise<WebhookSecret | null> {
    return this.store(accountId, callerKeyId, true);
  }

  private async store(accountId: string, callerKeyId: string | null, replace: boolean): Promise<WebhookSecret | null> {
    const secret = PREFIX + randomBytes(24).toString('base64');
    const rows = await this.conn().execute<{ created_at: Date | string }[]>(
      `insert into webhook_secret (account_id, secret_enc) select ?, ? where ${callerNotRevoked('?')}
       on conflict (account_id) do ${replace ? 'update set secret_enc = excluded.secret_enc, created_at = now()' : 'nothing'}
       returning created_at`,
      [accountId, this.seal(accountId, secret), callerKeyId],
    );
    if (rows[0]) return { secret, createdAt: new Date(rows[0].created_at) };
    // Two first reads at once: the one that lost the insert reads the winner's secret.
    return replace ? null : this.get(accountId);
  }

  private conn() {
    return this.em().getConnection();
  }

  private seal(accountId: string, secret: string): Buffer {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(accountId));
    const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return Buffer.concat([BOUND, iv, cipher.getAuthTag(), body]);
  }

  /** The secret in `stored`; `unbound` when it was sealed before secrets were bound to their account. */
  private open(accountId: string, stored: Buffer): { secret: string; unbound: boolean } | null {
    if (stored.subarray(0, BOUND.length).equals(BOUND)) {
      const secret = this.decrypt(stored.subarray(BOUND.length), Buffer.from(accountId));
      if (secret !== null) return { secret, unbound: false };
    }
    // Older rows have no prefix (a random IV may start with "v2:" too, hence the fall-through).
    const secret = this.decrypt(stored, null);
    return secret === null ? null : { secret, unbound: true };
  }

  private decrypt(data: Buffer, aad: Buffer | null): string | null {
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, data.subarray(0, 12));
      decipher.setAuthTag(data.subarray(12, 28));
      if (aad) decipher.setAAD(aad);
      return Buffer.concat([decipher.update(data.subarray(28)), decipher.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}
