import { Field, Float, ID, ObjectType } from 'type-graphql';
import { Connection } from '../../graphql/connection.js';
import { stringEnum } from '../../graphql/enums.js';
import { Credits, DateTime, JSONObject } from '../../graphql/scalars.js';
import { JOB_STATUSES, type JobStatus } from './job.entity.js';
import type { JobErrorView, JobView } from './job.view.js';

export const JobStatusEnum = stringEnum(JOB_STATUSES, 'JobStatus');

@ObjectType('JobError')
export class JobErrorType implements JobErrorView {
  @Field() code!: string;
  @Field() message!: string;
}

@ObjectType('Job', { description: 'One parse or transcription task' })
export class JobType implements JobView {
  @Field(() => ID) id!: string;
  @Field({ description: 'PARSE or TRANSCRIBE' }) operation!: string;
  @Field(() => JobStatusEnum) status!: JobStatus;
  @Field(() => Float, { description: '0..1' }) progress!: number;
  @Field(() => JSONObject) input!: Record<string, unknown>;
  @Field(() => JSONObject, { nullable: true, description: 'The success body, as the operation returned it' })
  result!: Record<string, unknown> | null;
  @Field(() => JobErrorType, { nullable: true, description: 'Why the job failed or was canceled' }) error!: JobErrorType | null;
  @Field(() => String, { nullable: true, description: 'The x-request-id of the request that opened the job (to quote when asking why it failed)' })
  requestId!: string | null;
  @Field(() => String, { nullable: true }) provider!: string | null;
  @Field(() => Credits, { description: 'Credits held while the job runs' }) creditsHeld!: number;
  @Field(() => Credits) creditsCharged!: number;
  @Field(() => DateTime) createdAt!: Date;
  @Field(() => DateTime, { nullable: true }) startedAt!: Date | null;
  @Field(() => DateTime, { nullable: true }) finishedAt!: Date | null;
  @Field(() => DateTime) deadlineAt!: Date;
}

export const JobConnection = Connection(JobType, 'Job');
