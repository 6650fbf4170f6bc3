import { Field, ID, ObjectType } from 'type-graphql';
import { Connection } from '../connection.js';
import { DateTime } from '../scalars.js';
import { InheritsScope } from '../scopes.js';
import { JobType } from '../jobs/job.graphql.js';
import { CreditEntryType } from './credit.graphql.js';

@ObjectType('CreditHistoryRow', {
  simpleResolvers: true,
  description:
    'One row of the credit history as a person reads it: a task, whose holds and capture or release are its job’s creditEntries (it charged job.creditsCharged: 0 when it failed or was canceled), or a ledger entry of no task (a grant, an adjustment, an expiry)',
})
export class CreditHistoryRowType {
  @Field(() => ID, { description: 'The job id for a task, the entry id otherwise' }) id!: string;
  @Field(() => DateTime, { description: 'When the task was opened, or the entry written' }) createdAt!: Date;
  // A row is reached only through creditHistoryByTask (read): its task and entry are the caller's own.
  @Field(() => JobType, { nullable: true, description: 'The task; null for an entry of no task' })
  @InheritsScope()
  job!: JobType | null;
  @Field(() => CreditEntryType, { nullable: true, description: 'The entry, when it belongs to no task; null for a task' })
  @InheritsScope()
  entry!: CreditEntryType | null;
}

export const CreditHistoryRowConnection = Connection(CreditHistoryRowType, 'CreditHistoryRow', 'credit history rows');
