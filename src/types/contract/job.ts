import { z } from 'zod';
import { ERROR_CODES } from '../../errors.js';
import { component, isoDateTime } from './common.js';

export const JOB_STATUSES = ['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED'] as const;
export const WEBHOOK_EVENT_TYPES = ['job.succeeded', 'job.failed', 'job.canceled'] as const;

export const webhookAttemptSchema = component(
  'WebhookAttempt',
  z.object({
    attempt: z.int().meta({ description: '1 for the first delivery' }),
    eventId: z.string().meta({ description: 'the webhook-id header: the same on every retry of one event' }),
    eventType: z.enum(WEBHOOK_EVENT_TYPES),
    statusCode: z.int().nullable().meta({ description: 'what the receiver answered; null when it could not be reached' }),
    error: z.string().nullable().meta({ description: 'why the attempt failed, in our words' }),
    durationMs: z.int(),
    createdAt: isoDateTime(),
  }),
);

export const jobBodySchema = component(
  'Job',
  z.object({
    id: z.uuid(),
    operation: z.enum(['PARSE', 'TRANSCRIBE']),
    status: z.enum(JOB_STATUSES).meta({ description: 'QUEUED → RUNNING → SUCCEEDED | FAILED, or CANCELED' }),
    progress: z.number().min(0).max(1).meta({ description: 'share of the media done, 0 to 1' }),
    input: z.record(z.string(), z.unknown()).meta({ description: 'the request body, as validated' }),
    result: z.record(z.string(), z.unknown()).nullable().meta({
      description:
        'once SUCCEEDED: exactly the body the waiting call answers (ParseResponse or TranscriptionResponse), credits.balance as at the capture; null before',
    }),
    error: z
      .object({ code: z.enum(['CANCELED', ...ERROR_CODES]), message: z.string() })
      .nullable()
      .meta({ description: 'once FAILED or CANCELED: why, with a code from the error table (CANCELED for a job the caller canceled)' }),
    requestId: z.string().nullable().meta({ description: 'the x-request-id of the request that opened the job' }),
    provider: z.string().nullable().meta({ description: 'the provider that did the work, once known' }),
    creditsHeld: z.int().meta({ description: 'credits on hold while the job is QUEUED or RUNNING; 0 after' }),
    creditsCharged: z.int().meta({ description: 'credits captured on success; 0 otherwise' }),
    streamedBytes: z.int().meta({
      description: 'bytes the gateway streamed for this parse’s stream URLs (delivery "stream"), added as each stream ends; 0 otherwise',
    }),
    createdAt: isoDateTime(),
    startedAt: isoDateTime().nullable(),
    finishedAt: isoDateTime().nullable(),
    deadlineAt: isoDateTime().meta({ description: 'past it the job fails (PROVIDER_TIMEOUT) and its hold is released' }),
    webhook: z
      .object({ url: z.string(), attempts: z.array(webhookAttemptSchema) })
      .nullable()
      .meta({
        description:
          'the webhookUrl the job was started with and each delivery attempt so far (attempts need the read scope: listed empty for a key without it); null without one',
      }),
  }),
  'A parse or transcription task, as GET /api/jobs/{id} shows it and webhooks deliver it',
);

/** A job as it goes on the wire: dates as ISO-8601 text. */
export type JobBodyJson = z.infer<typeof jobBodySchema>;
