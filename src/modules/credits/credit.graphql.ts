import { Field, ID, ObjectType, registerEnumType } from 'type-graphql';
import { Connection } from '../../graphql/connection.js';
import { Credits, DateTime } from '../../graphql/scalars.js';

export enum CreditEntryKindEnum {
  GRANT = 'GRANT',
  HOLD = 'HOLD',
  CAPTURE = 'CAPTURE',
  RELEASE = 'RELEASE',
  ADJUST = 'ADJUST',
  EXPIRE = 'EXPIRE',
}
registerEnumType(CreditEntryKindEnum, { name: 'CreditEntryKind' });

@ObjectType('CreditEntry', { description: 'One line of the append-only credit ledger' })
export class CreditEntryType {
  @Field(() => ID) id!: string;
  @Field(() => CreditEntryKindEnum) kind!: CreditEntryKindEnum;
  @Field(() => Credits) amount!: number;
  @Field(() => Credits, { description: 'Change to available credits' }) availableDelta!: number;
  @Field(() => Credits, { description: 'Change to held credits' }) heldDelta!: number;
  @Field(() => ID, { nullable: true }) jobId!: string | null;
  @Field(() => String, { nullable: true }) reason!: string | null;
  @Field(() => DateTime) createdAt!: Date;
}

export const CreditEntryConnection = Connection(CreditEntryType, 'CreditEntry');
