import { Migration } from '@mikro-orm/migrations';

/**
 * The credit history read per task: a page of jobs finds its ledger entries by job id, and the
 * entries of no task (grants, adjustments, expiries) are paged without reading past every task's.
 */
export class Migration20261126000000_history_by_task extends Migration {
  override name = 'Migration20261126000000_history_by_task';

  override up(): void {
    this.addSql(`create index credit_entry_job_idx on credit_entry (job_id, id) where job_id is not null;`);
    this.addSql(
      `create index credit_entry_account_untasked_idx on credit_entry (account_id, created_at desc, id desc) where job_id is null;`,
    );
  }
}
