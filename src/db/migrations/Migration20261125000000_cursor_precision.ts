import { Migration } from '@mikro-orm/migrations';

/**
 * The creation times that page cursors carry (job, credit_entry, account) are kept to the
 * millisecond, which is what a cursor (and a JavaScript Date) holds. With microseconds, rows made in
 * one millisecond (a batch of ledger entries shares one now()) sorted after their page's cursor
 * value, and the next page skipped them.
 */
export class Migration20261125000000_cursor_precision extends Migration {
  override name = 'Migration20261125000000_cursor_precision';

  override up(): void {
    for (const table of ['job', 'credit_entry', 'account']) {
      this.addSql(`alter table ${table} alter column created_at type timestamptz(3);`);
    }
  }
}
