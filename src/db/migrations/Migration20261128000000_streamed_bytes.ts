import { Migration } from '@mikro-orm/migrations';

/** Bytes the gateway streamed for a parse's stream URLs (CONTRACT.md, Streams), counted on its job. */
export class Migration20261128000000_streamed_bytes extends Migration {
  override name = 'Migration20261128000000_streamed_bytes';

  override up(): void {
    this.addSql(`alter table job add column streamed_bytes bigint not null default 0;`);
  }

  override down(): void {
    this.addSql(`alter table job drop column if exists streamed_bytes;`);
  }
}
