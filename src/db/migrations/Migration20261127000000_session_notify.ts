import { Migration } from '@mikro-orm/migrations';

/**
 * A session that ends (logout, a new sign-in in its browser, an operator's revocation) is announced
 * on `mediagate_session` (`{ id, accountId }`: the session's row id, never its secret), so every
 * instance closes the WebSockets signed in with it at once. Expiry is not notified: each socket keeps
 * a timer at its session's end.
 */
export class Migration20261127000000_session_notify extends Migration {
  override name = 'Migration20261127000000_session_notify';

  override up(): void {
    this.addSql(`
      create function mediagate_notify_session() returns trigger language plpgsql as $$
      begin
        perform pg_notify('mediagate_session', json_build_object('id', new.id, 'accountId', new.account_id)::text);
        return null;
      end $$;`);
    this.addSql(`
      create trigger account_session_notify_end after update of revoked_at on account_session for each row
      when (old.revoked_at is null and new.revoked_at is not null)
      execute function mediagate_notify_session();`);
  }

  override down(): void {
    this.addSql('drop trigger if exists account_session_notify_end on account_session;');
    this.addSql('drop function if exists mediagate_notify_session();');
  }
}
