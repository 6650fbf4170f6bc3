import type { WebhookAttempt } from '../webhooks/webhook.service.js';
import type { Job } from './job.entity.js';
import type { JobType } from './job.graphql.js';

/** The public face of a job row. */
export function toJobType(job: Job): JobType {
  return {
    id: job.id,
    operation: job.operation,
    status: job.status,
    progress: job.progress,
    input: job.input,
    result: job.result,
    error: job.errorCode ? { code: job.errorCode, message: job.errorMessage ?? '' } : null,
    requestId: job.requestId,
    provider: job.provider,
    creditsHeld: job.status === 'QUEUED' || job.status === 'RUNNING' ? job.holdAmount : 0,
    creditsCharged: job.creditsCharged,
    createdAt: job.createdAt,
    startedAt: job.startedAt,
    finishedAt: job.finishedAt,
    deadlineAt: job.deadlineAt,
  };
}

/** A job as REST shows it (GET /api/jobs/{id}) and webhooks deliver it: with its webhook and the attempts made. */
export function toJobBody(job: Job, attempts: WebhookAttempt[]): JobType & { webhook: { url: string; attempts: WebhookAttempt[] } | null } {
  const url = job.input.webhookUrl;
  return { ...toJobType(job), webhook: typeof url === 'string' ? { url, attempts } : null };
}
