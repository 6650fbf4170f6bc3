import { Migration } from '@mikro-orm/migrations';

/**
 * The database tells every instance what changed (LISTEN/NOTIFY, see db/notifications.ts) instead of
 * each one reading rows on a timer. Payloads are ids only (well under NOTIFY's 8000 bytes): a listener
 * re-reads the row, which stays the truth. A NOTIFY is sent when its transaction commits, never before.
 * - `mediagate_job`: a transcription was opened, or its status or progress changed (`{ id, accountId, status }`).
 * - `mediagate_auth`: what decides who may do what changed: a key, a membership, an account's roles or
 *   sign-in subject (`{ apiKeyId?, accountId }`), so a cache of keys can drop what it holds.
 */
export class Migration20261124000000_notify extends Migration {
  override name = 'Migration20261124000000_notify';

  override up(): void {
    this.addSql(`
      create function mediagate_notify_job() returns trigger language plpgsql as $$
      begin
        perform pg_notify('mediagate_job', json_build_object('id', new.id, 'accountId', new.account_id, 'status', new.status)::text);
        return null;
      end $$;`);
    // Transcriptions only. A commit that sends a NOTIFY takes a cluster-wide lock, so notifying for
    // every parse would serialize the hot path's commits (measured: 240-510 opens/s with it, 990-1,170
    // without, 8 clients). A parse lives seconds and is never queued or canceled by a worker; its rare
    // watcher re-reads on a short timer instead (JobUpdates.watch).
    this.addSql(
      `create trigger job_notify_insert after insert on job for each row when (new.operation = 'TRANSCRIBE') execute function mediagate_notify_job();`,
    );
    // Not on every write: results, webhooks and timestamps change nothing a watcher shows.
    this.addSql(`
      create trigger job_notify_update after update of status, progress on job for each row
      when (new.operation = 'TRANSCRIBE' and (old.status is distinct from new.status or old.progress is distinct from new.progress))
      execute function mediagate_notify_job();`);

    // The trigger's argument names the column that holds the account's id.
    this.addSql(`
      create function mediagate_notify_auth() returns trigger language plpgsql as $$
      declare
        changed jsonb := to_jsonb(case when tg_op = 'DELETE' then old else new end);
      begin
        perform pg_notify('mediagate_auth', jsonb_strip_nulls(jsonb_build_object(
          'apiKeyId', case when tg_table_name = 'api_key' then changed->>'id' end,
          'accountId', changed->>tg_argv[0]))::text);
        return null;
      end $$;`);
    this.addSql(
      `create trigger api_key_notify_auth after insert or delete on api_key for each row execute function mediagate_notify_auth('account_id');`,
    );
    // Not on last_used_at, which every authenticated request may write.
    this.addSql(`
      create trigger api_key_notify_auth_update after update of account_id, public_id, secret_hash, scopes, revoked_at on api_key for each row
      when ((old.account_id, old.public_id, old.secret_hash, old.scopes, old.revoked_at) is distinct from (new.account_id, new.public_id, new.secret_hash, new.scopes, new.revoked_at))
      execute function mediagate_notify_auth('account_id');`);
    this.addSql(
      `create trigger membership_notify_auth after insert or update or delete on membership for each row execute function mediagate_notify_auth('account_id');`,
    );
    this.addSql(`create trigger account_notify_auth after delete on account for each row execute function mediagate_notify_auth('id');`);
    this.addSql(`
      create trigger account_notify_auth_update after update of roles, oidc_subject on account for each row
      when ((old.roles, old.oidc_subject) is distinct from (new.roles, new.oidc_subject))
      execute function mediagate_notify_auth('id');`);
  }

  override down(): void {
    this.addSql('drop trigger if exists account_notify_auth_update on account;');
    this.addSql('drop trigger if exists account_notify_auth on account;');
    this.addSql('drop trigger if exists membership_notify_auth on membership;');
    this.addSql('drop trigger if exists api_key_notify_auth_update on api_key;');
    this.addSql('drop trigger if exists api_key_notify_auth on api_key;');
    this.addSql('drop function if exists mediagate_notify_auth();');
    this.addSql('drop trigger if exists job_notify_update on job;');
    this.addSql('drop trigger if exists job_notify_insert on job;');
    this.addSql('drop function if exists mediagate_notify_job();');
  }
}
