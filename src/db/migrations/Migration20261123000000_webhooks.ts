import { Migration } from '@mikro-orm/migrations';

/**
 * Webhooks: each account's signing secret (encrypted with a key derived from the pepper) and every
 * delivery attempt; and the id of the request that opened each job, so a failure can be traced.
 */
export class Migration20261123000000_webhooks extends Migration {
  override name = 'Migration20261123000000_webhooks';

  override up(): void {
    this.addSql(`
      create table webhook_secret (
        account_id uuid primary key references account (id) on delete cascade,
        secret_enc bytea not null,
        created_at timestamptz not null default now()
      );`);
    this.addSql(`
      create table webhook_attempt (
        id bigint generated always as identity primary key,
        job_id uuid not null references job (id) on delete cascade,
        event_id text not null,
        event_type text not null check (event_type in ('job.succeeded', 'job.failed', 'job.canceled')),
        attempt int not null check (attempt >= 1),
        status_code int null,
        error text null,
        duration_ms int not null check (duration_ms >= 0),
        created_at timestamptz not null default now()
      );`);
    this.addSql(`create index webhook_attempt_job_idx on webhook_attempt (job_id, id);`);
    this.addSql(`alter table job add column request_id text null;`);
  }

  override down(): void {
    this.addSql('drop table if exists webhook_attempt, webhook_secret cascade;');
    this.addSql('alter table job drop column if exists request_id;');
  }
}
