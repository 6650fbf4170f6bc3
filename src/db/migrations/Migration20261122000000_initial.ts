import { Migration } from '@mikro-orm/migrations';

/**
 * The first schema. Written by hand so the CHECK constraints that back the ledger's rules are
 * explicit: the database refuses a negative balance even if the code had a bug.
 */
export class Migration20261122000000_initial extends Migration {
  override name = 'Migration20261122000000_initial';

  override up(): void {
    this.addSql(`
      create table account (
        id uuid primary key,
        name text not null check (length(name) between 1 and 200),
        email text null,
        roles text[] not null default '{}',
        oidc_subject text null unique,
        created_at timestamptz not null default now()
      );`);
    this.addSql(`
      create table membership (
        account_id uuid primary key references account (id) on delete cascade,
        plan text not null default 'monthly',
        status text not null check (status in ('active', 'canceled')),
        period_end timestamptz not null,
        updated_at timestamptz not null default now()
      );`);
    this.addSql(`
      create table api_key (
        id uuid primary key,
        account_id uuid not null references account (id) on delete cascade,
        name text not null,
        public_id text not null unique,
        secret_hash bytea not null,
        last4 text not null,
        scopes text[] not null default '{}',
        created_at timestamptz not null default now(),
        last_used_at timestamptz null,
        revoked_at timestamptz null
      );`);
    this.addSql(`create index api_key_account_idx on api_key (account_id);`);
    this.addSql(`
      create table credit_balance (
        account_id uuid primary key references account (id) on delete cascade,
        available bigint not null default 0,
        held bigint not null default 0,
        updated_at timestamptz not null default now(),
        constraint credit_balance_non_negative check (available >= 0 and held >= 0)
      );`);
    this.addSql(`
      create table job (
        id uuid primary key,
        account_id uuid not null references account (id) on delete cascade,
        api_key_id uuid null references api_key (id) on delete set null,
        operation text not null check (operation in ('PARSE', 'TRANSCRIBE')),
        status text not null check (status in ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED')),
        input jsonb not null,
        result jsonb null,
        error_code text null,
        error_message text null,
        provider text null,
        hold_amount bigint not null default 0 check (hold_amount >= 0),
        credits_charged bigint not null default 0 check (credits_charged >= 0),
        balance_after bigint null,
        idempotency_key text null,
        request_hash text null,
        progress real not null default 0 check (progress >= 0 and progress <= 1),
        deadline_at timestamptz not null,
        created_at timestamptz not null default now(),
        started_at timestamptz null,
        finished_at timestamptz null,
        constraint job_charge_within_hold check (credits_charged <= hold_amount),
        constraint job_finished_has_time check ((status in ('QUEUED', 'RUNNING')) = (finished_at is null))
      );`);
    this.addSql(`create index job_account_created_idx on job (account_id, created_at desc, id desc);`);
    this.addSql(`create index job_open_deadline_idx on job (deadline_at) where status in ('QUEUED', 'RUNNING');`);
    // A key names one live or successful task; a failed one frees its key for a retry.
    this.addSql(
      `create unique index job_idempotency_idx on job (account_id, idempotency_key) where idempotency_key is not null and status not in ('FAILED', 'CANCELED');`,
    );
    this.addSql(`
      create table credit_entry (
        id bigint generated always as identity primary key,
        account_id uuid not null references account (id) on delete cascade,
        kind text not null check (kind in ('GRANT', 'HOLD', 'CAPTURE', 'RELEASE', 'ADJUST', 'EXPIRE')),
        amount bigint not null check (amount >= 0),
        available_delta bigint not null,
        held_delta bigint not null,
        job_id uuid null references job (id) on delete set null,
        reason text null,
        created_at timestamptz not null default now(),
        constraint credit_entry_kind_deltas check (
          (kind = 'GRANT' and available_delta = amount and held_delta = 0) or
          (kind = 'HOLD' and available_delta = -amount and held_delta = amount) or
          (kind = 'CAPTURE' and available_delta = 0 and held_delta = -amount) or
          (kind = 'RELEASE' and available_delta = amount and held_delta = -amount) or
          (kind in ('ADJUST', 'EXPIRE') and held_delta = 0)
        )
      );`);
    this.addSql(`create index credit_entry_account_idx on credit_entry (account_id, created_at desc, id desc);`);
    // A hold is resolved exactly once: one CAPTURE or RELEASE per job, never both, never twice.
    this.addSql(
      `create unique index credit_entry_one_resolution on credit_entry (job_id) where kind in ('CAPTURE', 'RELEASE') and job_id is not null;`,
    );
  }

  override down(): void {
    this.addSql('drop table if exists credit_entry, job, credit_balance, api_key, membership, account cascade;');
  }
}
