import { Field, ID, ObjectType } from 'type-graphql';
import { Connection } from '../connection.js';
import { stringEnum } from '../enums.js';
import { Credits, DateTime } from '../scalars.js';
import { CREDIT_ENTRY_KINDS, type CreditEntryKind } from '../../modules/credits/credit-entry.entity.js';

export const CreditEntryKindEnum = stringEnum(CREDIT_ENTRY_KINDS, 'CreditEntryKind', 'What a ledger entry did to the balance', {
  GRANT: 'Credits added to available (an operator’s grant)',
  HOLD: 'A task’s price set aside: available → held',
  CAPTURE: 'A held price spent on success: held decreases, available unchanged',
  RELEASE: 'A held price returned in full after a failure or cancelation: held → available',
  ADJUST: 'An operator’s correction of available (either sign)',
  EXPIRE: 'Credits removed from available because they expired',
});

@ObjectType('CreditEntry', {
  simpleResolvers: true,
  description: 'One line of the append-only credit ledger; the entries of an account sum to its balance',
})
export class CreditEntryType {
  @Field(() => ID, { description: 'The entry id; later entries have larger ids' }) id!: string;
  @Field(() => CreditEntryKindEnum, { description: 'What the entry did' }) kind!: CreditEntryKind;
  @Field(() => Credits, { description: 'Credits moved, never negative; the deltas give the direction' }) amount!: number;
  @Field(() => Credits, { description: 'Change to available credits (negative for a HOLD)' }) availableDelta!: number;
  @Field(() => Credits, { description: 'Change to held credits (negative for a CAPTURE or RELEASE)' }) heldDelta!: number;
  @Field(() => ID, { nullable: true, description: 'The job the entry belongs to; null for grants, adjustments and expiries' }) jobId!:
    | string
    | null;
  @Field(() => String, { nullable: true, description: 'Why, in the operator’s words (grants, adjustments); null for task entries' })
  reason!: string | null;
  @Field(() => DateTime, { description: 'When the entry was written' }) createdAt!: Date;
}

export const CreditEntryConnection = Connection(CreditEntryType, 'CreditEntry', 'ledger entries');
