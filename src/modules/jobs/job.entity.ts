import { OptionalProps, BigIntType } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';

export const JOB_STATUSES = ['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export type JobOperation = 'PARSE' | 'TRANSCRIBE';

/** One parse or transcription task, with the hold it placed and what it finally charged. */
@Entity({ tableName: 'job' })
export class Job {
  [OptionalProps]?:
    | 'apiKeyId'
    | 'result'
    | 'errorCode'
    | 'errorMessage'
    | 'provider'
    | 'holdAmount'
    | 'creditsCharged'
    | 'balanceAfter'
    | 'idempotencyKey'
    | 'requestHash'
    | 'requestId'
    | 'progress'
    | 'streamedBytes'
    | 'createdAt'
    | 'startedAt'
    | 'finishedAt';

  @PrimaryKey({ type: 'uuid' })
  id!: string;

  @Property({ type: 'uuid', fieldName: 'account_id' })
  accountId!: string;

  @Property({ type: 'uuid', fieldName: 'api_key_id', nullable: true })
  apiKeyId: string | null = null;

  @Property({ type: 'text' })
  operation!: JobOperation;

  @Property({ type: 'text' })
  status!: JobStatus;

  @Property({ type: 'json' })
  input!: Record<string, unknown>;

  @Property({ type: 'json', nullable: true })
  result: Record<string, unknown> | null = null;

  @Property({ type: 'text', nullable: true })
  errorCode: string | null = null;

  @Property({ type: 'text', nullable: true })
  errorMessage: string | null = null;

  @Property({ type: 'text', nullable: true })
  provider: string | null = null;

  @Property({ type: new BigIntType('number') })
  holdAmount: number = 0;

  @Property({ type: new BigIntType('number') })
  creditsCharged: number = 0;

  /** The available balance right after the capture: what a replayed response reports. */
  @Property({ type: new BigIntType('number'), nullable: true })
  balanceAfter: number | null = null;

  @Property({ type: 'text', nullable: true })
  idempotencyKey: string | null = null;

  @Property({ type: 'text', nullable: true })
  requestHash: string | null = null;

  /** The request that opened the job (its x-request-id), for finding why it failed in the logs. */
  @Property({ type: 'text', nullable: true })
  requestId: string | null = null;

  @Property({ type: 'float' })
  progress: number = 0;

  /** Bytes the gateway streamed for this parse's stream URLs (added as each stream ends). */
  @Property({ type: new BigIntType('number'), fieldName: 'streamed_bytes' })
  streamedBytes: number = 0;

  @Property({ type: 'timestamptz' })
  deadlineAt!: Date;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'timestamptz', nullable: true })
  startedAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  finishedAt: Date | null = null;
}
