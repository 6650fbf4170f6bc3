import { Field, Int, ObjectType } from 'type-graphql';
import { stringEnum } from '../enums.js';
import { Credits, DateTime } from '../scalars.js';
import { USAGE_DIMENSIONS, USAGE_GROUPINGS } from '../../modules/credits/credit-usage.repository.js';

export const UsageGroupingEnum = stringEnum(USAGE_GROUPINGS, 'UsageGrouping', 'Calendar periods in UTC; weeks start on Monday', {
  DAY: 'One bucket per UTC day',
  WEEK: 'One bucket per week, from Monday 00:00 UTC',
  MONTH: 'One bucket per calendar month (UTC)',
});
export const UsageDimensionEnum = stringEnum(USAGE_DIMENSIONS, 'UsageDimension', 'What a usage bucket’s key tells apart', {
  OPERATION: 'One bucket per operation: key is PARSE or TRANSCRIBE',
  ACCOUNT: 'One bucket per account: key is the account id (analysts see every account, others their own)',
});

@ObjectType('UsageBucket', { simpleResolvers: true, description: 'Credits consumed (captured) in one period by one operation or account' })
export class UsageBucketType {
  @Field(() => DateTime, { description: 'Start of the period' }) period!: Date;
  @Field({ description: 'The operation (PARSE, TRANSCRIBE) or the account id' }) key!: string;
  @Field(() => Credits, { description: 'Credits captured (successful tasks only; holds and releases do not count)' }) credits!: number;
  @Field(() => Int, { description: 'Successful tasks' }) tasks!: number;
}

@ObjectType('OperationUsage', {
  simpleResolvers: true,
  description: 'Credits one account consumed (captured) by one operation in a window',
})
export class OperationUsageType {
  @Field({ description: 'PARSE or TRANSCRIBE' }) operation!: string;
  @Field(() => Credits, { description: 'Credits captured (successful tasks only)' }) credits!: number;
  @Field(() => Int, { description: 'Successful tasks' }) tasks!: number;
}
