import { OptionalProps, BigIntType } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';

/** The running balance; written only by the ledger's single-statement operations. */
@Entity({ tableName: 'credit_balance' })
export class CreditBalance {
  [OptionalProps]?: 'available' | 'held' | 'updatedAt';

  @PrimaryKey({ type: 'uuid', fieldName: 'account_id' })
  accountId!: string;

  @Property({ type: new BigIntType('number') })
  available: number = 0;

  @Property({ type: new BigIntType('number') })
  held: number = 0;

  @Property({ type: 'timestamptz' })
  updatedAt: Date = new Date();
}
