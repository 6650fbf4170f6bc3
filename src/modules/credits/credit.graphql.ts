import { Field, ID, ObjectType } from 'type-graphql';
import { Connection } from '../../graphql/connection.js';
import { stringEnum } from '../../graphql/enums.js';
import { Credits, DateTime } from '../../graphql/scalars.js';
import { CREDIT_ENTRY_KINDS, type CreditEntryKind } from './credit-entry.entity.js';

export const CreditEntryKindEnum = stringEnum(CREDIT_ENTRY_KINDS, 'CreditEntryKind');

@ObjectType('CreditEntry', { description: 'One line of the append-only credit ledger' })
export class CreditEntryType {
  @Field(() => ID) id!: string;
  @Field(() => CreditEntryKindEnum) kind!: CreditEntryKind;
  @Field(() => Credits) amount!: number;
  @Field(() => Credits, { description: 'Change to available credits' }) availableDelta!: number;
  @Field(() => Credits, { description: 'Change to held credits' }) heldDelta!: number;
  @Field(() => ID, { nullable: true }) jobId!: string | null;
  @Field(() => String, { nullable: true }) reason!: string | null;
  @Field(() => DateTime) createdAt!: Date;
}

export const CreditEntryConnection = Connection(CreditEntryType, 'CreditEntry');
