import { OptionalProps } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';

export type MembershipStatus = 'active' | 'canceled';

/** An account's monthly membership; active while status is active and period_end lies ahead. */
@Entity({ tableName: 'membership' })
export class Membership {
  [OptionalProps]?: 'plan' | 'updatedAt';

  @PrimaryKey({ type: 'uuid', fieldName: 'account_id' })
  accountId!: string;

  @Property({ type: 'text' })
  plan: string = 'monthly';

  @Property({ type: 'text' })
  status!: MembershipStatus;

  @Property({ type: 'timestamptz' })
  periodEnd!: Date;

  @Property({ type: 'timestamptz', onUpdate: () => new Date() })
  updatedAt: Date = new Date();

  isActive(now = new Date()): boolean {
    return this.status === 'active' && this.periodEnd > now;
  }
}
