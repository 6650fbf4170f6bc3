import { Field, Int, ObjectType } from 'type-graphql';
import { stringEnum } from '../../graphql/enums.js';
import { Credits, DateTime } from '../../graphql/scalars.js';
import { USAGE_DIMENSIONS, USAGE_GROUPINGS } from './credit-usage.repository.js';

export const UsageGroupingEnum = stringEnum(USAGE_GROUPINGS, 'UsageGrouping', 'Calendar periods in UTC; weeks start on Monday');
export const UsageDimensionEnum = stringEnum(USAGE_DIMENSIONS, 'UsageDimension');

@ObjectType('UsageBucket', { description: 'Credits consumed (captured) in one period by one operation or account' })
export class UsageBucketType {
  @Field(() => DateTime, { description: 'Start of the period' }) period!: Date;
  @Field({ description: 'The operation (PARSE, TRANSCRIBE) or the account id' }) key!: string;
  @Field(() => Credits) credits!: number;
  @Field(() => Int, { description: 'Successful tasks' }) tasks!: number;
}

@ObjectType('OperationUsage', { description: 'Credits one account consumed (captured) by one operation in a window' })
export class OperationUsageType {
  @Field({ description: 'PARSE or TRANSCRIBE' }) operation!: string;
  @Field(() => Credits) credits!: number;
  @Field(() => Int, { description: 'Successful tasks' }) tasks!: number;
}
