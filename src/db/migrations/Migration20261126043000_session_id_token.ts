import { Migration } from '@mikro-orm/migrations';

/**
 * A session opened with an OpenID Connect ID token keeps the token's HMAC (with the pepper), unique,
 * so each ID token is exchanged for a session once.
 */
export class Migration20261126043000_session_id_token extends Migration {
  override name = 'Migration20261126043000_session_id_token';

  override up(): void {
    this.addSql(`alter table account_session add column id_token_hash bytea null unique;`);
  }

  override down(): void {
    this.addSql(`alter table account_session drop column if exists id_token_hash;`);
  }
}
