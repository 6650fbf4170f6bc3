import { OptionalProps, BigIntType } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';

export const CREDIT_ENTRY_KINDS = ['GRANT', 'HOLD', 'CAPTURE', 'RELEASE', 'ADJUST', 'EXPIRE'] as const;
export type CreditEntryKind = (typeof CREDIT_ENTRY_KINDS)[number];

/** One line of the append-only ledger. Entries are never updated: a hold is resolved by a new entry. */
@Entity({ tableName: 'credit_entry' })
export class CreditEntry {
  [OptionalProps]?: 'id' | 'jobId' | 'reason' | 'createdAt';

  @PrimaryKey({ type: new BigIntType('number'), autoincrement: true })
  id!: number;

  @Property({ type: 'uuid', fieldName: 'account_id' })
  accountId!: string;

  @Property({ type: 'text' })
  kind!: CreditEntryKind;

  @Property({ type: new BigIntType('number') })
  amount!: number;

  @Property({ type: new BigIntType('number') })
  availableDelta!: number;

  @Property({ type: new BigIntType('number') })
  heldDelta!: number;

  @Property({ type: 'uuid', fieldName: 'job_id', nullable: true })
  jobId: string | null = null;

  @Property({ type: 'text', nullable: true })
  reason: string | null = null;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
