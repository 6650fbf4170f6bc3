import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';

/** The prefix Standard Webhooks gives signing secrets; the rest is the key, base64. */
const PREFIX = 'whsec_';

/** An account's signing secret and when it was made. */
export interface WebhookSecret {
  secret: string;
  createdAt: Date;
}

/**
 * Each account's webhook signing secret. The gateway must sign with it and the holder must be able
 * to read it, so it cannot be hashed: it is kept encrypted (AES-256-GCM) under a key derived from
 * the server's pepper, never in clear. A secret that no longer decrypts (the pepper changed) is
 * replaced by a new one on the next read.
 */
export class WebhookSecretRepository {
  private readonly key: Buffer;

  constructor(
    private readonly em: () => EntityManager,
    pepper: string,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', pepper, 'mediagate', 'webhook signing secrets', 32));
  }

  /** The account's secret, made on first use. */
  async get(accountId: string): Promise<WebhookSecret> {
    const rows = await this.em()
      .getConnection()
      .execute<{ secret_enc: Buffer; created_at: Date | string }[]>(`select secret_enc, created_at from webhook_secret where account_id = ?`, [accountId]);
    const row = rows[0];
    const secret = row ? this.decrypt(row.secret_enc) : null;
    if (row && secret) return { secret, createdAt: new Date(row.created_at) };
    return this.store(accountId, /* replace */ !!row);
  }

  /** A new secret; the old one stops working at once (deliveries still retrying are signed with the new one). */
  rotate(accountId: string): Promise<WebhookSecret> {
    return this.store(accountId, true);
  }

  private async store(accountId: string, replace: boolean): Promise<WebhookSecret> {
    const secret = PREFIX + randomBytes(24).toString('base64');
    const rows = await this.em()
      .getConnection()
      .execute<{ secret_enc: Buffer; created_at: Date | string }[]>(
        `insert into webhook_secret (account_id, secret_enc) values (?, ?)
         on conflict (account_id) do ${replace ? 'update set secret_enc = excluded.secret_enc, created_at = now()' : 'nothing'}
         returning secret_enc, created_at`,
        [accountId, this.encrypt(secret)],
      );
    // Two first reads at once: the one that lost the insert reads the winner's secret.
    if (!rows[0]) return this.get(accountId);
    return { secret: this.decrypt(rows[0].secret_enc)!, createdAt: new Date(rows[0].created_at) };
  }

  private encrypt(secret: string): Buffer {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]);
  }

  private decrypt(blob: Buffer): string | null {
    try {
      const data = Buffer.from(blob);
      const decipher = createDecipheriv('aes-256-gcm', this.key, data.subarray(0, 12));
      decipher.setAuthTag(data.subarray(12, 28));
      return Buffer.concat([decipher.update(data.subarray(28)), decipher.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}
