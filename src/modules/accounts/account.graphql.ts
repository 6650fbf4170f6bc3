import { Field, ID, ObjectType } from 'type-graphql';
import { Connection } from '../../graphql/connection.js';
import { Credits, DateTime } from '../../graphql/scalars.js';

@ObjectType('Membership')
export class MembershipType {
  @Field() plan!: string;
  @Field({ description: 'active or canceled' }) status!: string;
  @Field(() => DateTime) periodEnd!: Date;
  @Field({ description: 'True while status is active and periodEnd lies ahead' }) active!: boolean;
}

@ObjectType('CreditBalance')
export class CreditBalanceType {
  @Field(() => Credits, { description: 'Credits that can be spent now' }) available!: number;
  @Field(() => Credits, { description: 'Credits on hold for running tasks' }) held!: number;
}

@ObjectType('Account')
export class AccountType {
  @Field(() => ID) id!: string;
  @Field() name!: string;
  @Field(() => String, { nullable: true }) email!: string | null;
  @Field(() => DateTime) createdAt!: Date;
  @Field(() => MembershipType, { nullable: true }) membership!: MembershipType | null;
  @Field(() => CreditBalanceType) credits!: CreditBalanceType;
}

export const AccountConnection = Connection(AccountType, 'Account');
