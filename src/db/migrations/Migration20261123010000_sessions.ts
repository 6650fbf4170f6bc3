import { Migration } from '@mikro-orm/migrations';

/**
 * Sign-in to the account area without an identity provider: single-use login links (made by
 * `mediagate account login-link`) and the browser sessions they are exchanged for. Both secrets,
 * the link's token and the session id in the cookie, are stored only as HMACs with the pepper.
 */
export class Migration20261123010000_sessions extends Migration {
  override name = 'Migration20261123010000_sessions';

  override up(): void {
    this.addSql(`
      create table login_link (
        id uuid primary key,
        account_id uuid not null references account (id) on delete cascade,
        token_hash bytea not null unique,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null,
        used_at timestamptz null,
        check (expires_at > created_at)
      );`);
    this.addSql(`create index login_link_account_idx on login_link (account_id);`);
    this.addSql(`
      create table account_session (
        id uuid primary key,
        account_id uuid not null references account (id) on delete cascade,
        session_hash bytea not null unique,
        csrf_token text not null,
        login_link_id uuid null references login_link (id) on delete set null,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null,
        revoked_at timestamptz null,
        check (expires_at > created_at)
      );`);
    this.addSql(`create index account_session_account_idx on account_session (account_id);`);
  }

  override down(): void {
    this.addSql('drop table if exists account_session, login_link cascade;');
  }
}
