import type { WebhookAttempt } from '../webhooks/webhook.service.js';
import type { Job, JobStatus } from './job.entity.js';
import { jobSuccessBody } from './job.result.js';

/** Why a job failed or was canceled. */
export interface JobErrorView {
  code: string;
  message: string;
}

/**
 * The public face of a job row, the same for every door: GraphQL's `Job` type implements it, REST
 * (GET /api/jobs/{id}) and webhooks send it as JSON.
 */
export interface JobView {
  id: string;
  /** PARSE or TRANSCRIBE */
  operation: string;
  status: JobStatus;
  /** 0..1 */
  progress: number;
  input: Record<string, unknown>;
  /** Once SUCCEEDED: exactly the body the waiting call answers (id, provider, credits at the capture). */
  result: Record<string, unknown> | null;
  error: JobErrorView | null;
  requestId: string | null;
  provider: string | null;
  creditsHeld: number;
  creditsCharged: number;
  /** Bytes the gateway streamed for a parse's stream URLs so far (0 for a transcription). */
  streamedBytes: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  deadlineAt: Date;
}

/** A job as REST shows it (GET /api/jobs/{id}) and webhooks deliver it: with its webhook and the attempts made. */
export type JobBody = JobView & { webhook: { url: string; attempts: WebhookAttempt[] } | null };

/** The public face of a job row. */
export function toJobView(job: Job): JobView {
  return {
    id: job.id,
    operation: job.operation,
    status: job.status,
    progress: job.progress,
    input: job.input,
    result: jobSuccessBody(job),
    error: job.errorCode ? { code: job.errorCode, message: job.errorMessage ?? '' } : null,
    requestId: job.requestId,
    provider: job.provider,
    creditsHeld: job.status === 'QUEUED' || job.status === 'RUNNING' ? job.holdAmount : 0,
    creditsCharged: job.creditsCharged,
    streamedBytes: job.streamedBytes,
    createdAt: job.createdAt,
    startedAt: job.startedAt,
    finishedAt: job.finishedAt,
    deadlineAt: job.deadlineAt,
  };
}

/** The name the resolvers use: GraphQL's `JobType` implements `JobView`, so a view is a valid `Job`. */
export const toJobType = toJobView;

export function toJobBody(job: Job, attempts: WebhookAttempt[]): JobBody {
  const url = job.input.webhookUrl;
  return { ...toJobView(job), webhook: typeof url === 'string' ? { url, attempts } : null };
}
