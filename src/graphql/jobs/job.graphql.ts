import { Field, Float, ID, ObjectType } from 'type-graphql';
import { Connection } from '../connection.js';
import { stringEnum } from '../enums.js';
import { Credits, DateTime, JSONObject } from '../scalars.js';
import { InheritsScope } from '../scopes.js';
import { JOB_STATUSES, type JobStatus } from '../../modules/jobs/job.entity.js';
import type { JobErrorView, JobView } from '../../modules/jobs/job.view.js';

export const JobStatusEnum = stringEnum(JOB_STATUSES, 'JobStatus', 'Where a job is: QUEUED → RUNNING → SUCCEEDED | FAILED, or CANCELED', {
  QUEUED: 'Waiting for a worker; its price is held',
  RUNNING: 'Being worked on; progress moves from 0 to 1',
  SUCCEEDED: 'Done: result holds the answer and the hold was captured (creditsCharged)',
  FAILED: 'Ended without a result: error says why; the hold was released, nothing charged',
  CANCELED: 'Canceled by cancelJob before it finished; the hold was released, nothing charged',
});

@ObjectType('JobError', { simpleResolvers: true, description: 'Why a job failed or was canceled' })
export class JobErrorType implements JobErrorView {
  @Field({
    description:
      'A code from the error table, as REST and GraphQL errors carry it (e.g. PROVIDER_TIMEOUT, NO_MEDIA_FOUND), or CANCELED for a job the caller canceled',
  })
  code!: string;
  @Field({ description: 'What happened, for people' }) message!: string;
}

@ObjectType('Job', { simpleResolvers: true, description: 'One parse or transcription task' })
export class JobType implements JobView {
  @Field(() => ID, { description: 'The job id (a UUID); also the id of the operation’s answer' }) id!: string;
  @Field({ description: 'PARSE or TRANSCRIBE' }) operation!: string;
  @Field(() => JobStatusEnum, { description: 'Where the job is' }) status!: JobStatus;
  @Field(() => Float, { description: 'Share of the work done, 0 to 1 (for long media, the share of the audio transcribed)' })
  progress!: number;
  @Field(() => JSONObject, { description: 'The input, as validated (ParseInput or TranscribeInput fields)' }) input!: Record<
    string,
    unknown
  >;
  @Field(() => JSONObject, {
    nullable: true,
    description:
      'Once SUCCEEDED: exactly the body the waiting call (parse, transcribe) answers, with id, provider and credits { charged balance } as at the capture; null before',
  })
  result!: Record<string, unknown> | null;
  @Field(() => JobErrorType, { nullable: true, description: 'Why the job failed or was canceled; null otherwise' })
  @InheritsScope()
  error!: JobErrorType | null;
  @Field(() => String, {
    nullable: true,
    description: 'The x-request-id of the request that opened the job (to quote when asking why it failed)',
  })
  requestId!: string | null;
  @Field(() => String, {
    nullable: true,
    description: 'The provider that did the work (builtin, cobalt, ytdlp; openai, deepgram, assemblyai, local); null until one answered',
  })
  provider!: string | null;
  @Field(() => Credits, { description: 'Credits held while the job is QUEUED or RUNNING; 0 once it ended' }) creditsHeld!: number;
  @Field(() => Credits, { description: 'Credits captured when the job SUCCEEDED; 0 otherwise' }) creditsCharged!: number;
  @Field(() => Credits, {
    description: 'Bytes the gateway streamed for this parse’s stream URLs (delivery "stream"), added as each stream ends; 0 otherwise',
  })
  streamedBytes!: number;
  @Field(() => DateTime, { description: 'When the job was opened' }) createdAt!: Date;
  @Field(() => DateTime, { nullable: true, description: 'When a worker started it; null while QUEUED' }) startedAt!: Date | null;
  @Field(() => DateTime, { nullable: true, description: 'When it ended (SUCCEEDED, FAILED or CANCELED); null before' })
  finishedAt!: Date | null;
  @Field(() => DateTime, {
    description:
      'Past this time an unfinished job fails with PROVIDER_TIMEOUT and its hold is released (PARSE_TIMEOUT_SECONDS, TRANSCRIBE_TIMEOUT_SECONDS)',
  })
  deadlineAt!: Date;
}

export const JobConnection = Connection(JobType, 'Job', 'jobs');
