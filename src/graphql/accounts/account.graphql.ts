import { Field, ID, ObjectType } from 'type-graphql';
import { Connection } from '../connection.js';
import { Credits, DateTime } from '../scalars.js';
import { InheritsScope } from '../scopes.js';

@ObjectType('Membership', {
  simpleResolvers: true,
  description: 'The account’s paid membership, which the work operations (parse, transcribe) need with an API key',
})
export class MembershipType {
  @Field({ description: 'The plan’s name, e.g. monthly' }) plan!: string;
  @Field({ description: 'active or canceled (canceled ends it at once, whatever periodEnd says)' }) status!: string;
  @Field(() => DateTime, { description: 'When the paid period ends; after it the membership is no longer active' }) periodEnd!: Date;
  @Field({ description: 'True while status is active and periodEnd lies ahead' }) active!: boolean;
}

@ObjectType('CreditBalance', { simpleResolvers: true, description: 'An account’s credits, in whole credits; total = available + held' })
export class CreditBalanceType {
  @Field(() => Credits, { description: 'Credits that can be spent now (a new task holds its price from these)' }) available!: number;
  @Field(() => Credits, {
    description: 'Credits on hold for queued or running tasks: captured on success, returned to available on failure',
  })
  held!: number;
}

@ObjectType('Account', { simpleResolvers: true, description: 'A customer account: its membership, credits, keys and usage' })
export class AccountType {
  @Field(() => ID, { description: 'The account id (a UUID)' }) id!: string;
  @Field({ description: 'The account’s display name' }) name!: string;
  @Field(() => String, { nullable: true, description: 'Contact address; null when none was given' }) email!: string | null;
  @Field(() => DateTime, { description: 'When the account was created' }) createdAt!: Date;
  @Field(() => MembershipType, { nullable: true, description: 'The membership; null when the account never had one' })
  @InheritsScope()
  membership!: MembershipType | null;
  @Field(() => CreditBalanceType, { description: 'The current balance' })
  @InheritsScope()
  credits!: CreditBalanceType;
}

export const AccountConnection = Connection(AccountType, 'Account', 'accounts');
