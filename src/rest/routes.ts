import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import parsePrefer from 'parse-prefer-header';
import { AppError } from '../errors.js';
import type { Principal } from '../modules/api-keys/api-key.service.js';
import { httpRequestContext } from '../http/credentials.js';
import type { Job } from '../modules/jobs/job.entity.js';
import { toJobBody } from '../modules/jobs/job.view.js';
import { toSrt, toVtt } from '../modules/transcription/subtitles.js';
import type { TranscriptSegment } from '../providers/transcription/transcription.types.js';
import type { Services } from '../modules/services.js';
import { jobBodySchema, parseResponseSchema, standaloneSchema, transcriptionResponseSchema } from '../types/contract/index.js';
import { SUBTITLE_CONTENT_TYPES, negotiateFormat } from './subtitle-negotiation.js';

/**
 * The success bodies' schemas, from the contract: Fastify serializes each answer with them
 * (fast-json-stringify: faster than JSON.stringify, and nothing undocumented leaves the gateway).
 */
const JOB = standaloneSchema(jobBodySchema);
const RESPONSES = {
  parse: { 200: standaloneSchema(parseResponseSchema) },
  transcribe: { 200: standaloneSchema(transcriptionResponseSchema), 202: JOB },
  job: { 200: JOB },
};

/** The contract's cap on REST bodies. */
export const REST_BODY_LIMIT = 16 * 1024;

/**
 * The REST shims: translation only. Each runs the same service call as its GraphQL mutation, with
 * the same request context, so auth, validation, credits and results cannot differ between doors.
 */
export function registerRestRoutes(app: FastifyInstance, services: Services): void {
  const ctx = (req: FastifyRequest) => httpRequestContext(services.auth, req);

  app.post('/api/parse', { bodyLimit: REST_BODY_LIMIT, schema: { response: RESPONSES.parse } }, async (req) => {
    const principal = await ctx(req).principal();
    return services.parse.parse(principal, bodyObject(req.body), { idempotencyKey: idempotencyKey(req) });
  });

  app.post('/api/transcribe', { bodyLimit: REST_BODY_LIMIT, schema: { response: RESPONSES.transcribe } }, async (req, reply) => {
    const principal = await ctx(req).principal();
    const format = negotiateFormat((req.query as Record<string, unknown>).format, req.headers.accept);
    if (parsePrefer(req.headers.prefer ?? []).respondAsync) {
      // RFC 7240: answer at once with the job to poll.
      const jobId = await services.transcription.start(principal, bodyObject(req.body), { idempotencyKey: idempotencyKey(req) });
      const job = await jobBody(services, principal, await services.jobs.started(principal, jobId));
      return reply.status(202).header('location', `/api/jobs/${jobId}`).header('preference-applied', 'respond-async').send(job);
    }
    const result = await services.transcription.transcribe(principal, bodyObject(req.body), { idempotencyKey: idempotencyKey(req) });
    if (format === 'json') return result;
    return sendSubtitles(reply, format, result.segments);
  });

  app.get<{ Params: { id: string } }>('/api/jobs/:id', { schema: { response: RESPONSES.job } }, async (req) => {
    const principal = await ctx(req).principal();
    return jobBody(services, principal, await services.jobs.forCaller(principal, req.params.id));
  });

  // cancelJob's door: the same service call, answered with the job as GET shows it.
  app.post<{ Params: { id: string } }>('/api/jobs/:id/cancel', { schema: { response: RESPONSES.job } }, async (req) => {
    const principal = await ctx(req).principal();
    return jobBody(services, principal, await services.jobs.cancel(principal, req.params.id));
  });

  // The creditHistory query as a CSV download, streamed: errors before the first byte are error bodies.
  app.get('/api/credit-history.csv', async (req, reply) => {
    const principal = await ctx(req).principal();
    const csv = await services.creditHistory.exportCsv(principal, req.query as Record<string, unknown>);
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${csv.filename}"`)
      .header('cache-control', 'private, no-store')
      .send(csv.body);
  });

  app.get<{ Params: { id: string; ext: string } }>('/api/transcriptions/:file', async (req, reply) => {
    const m = /^(.+)\.(srt|vtt)$/.exec((req.params as unknown as { file: string }).file);
    if (!m) throw new AppError('NOT_FOUND', 'Ask for /api/transcriptions/{id}.srt or .vtt.');
    const principal = await ctx(req).principal();
    const job = await services.jobs.finishedTranscription(principal, m[1]);
    return sendSubtitles(reply, m[2] as 'srt' | 'vtt', (job.result.segments ?? []) as TranscriptSegment[]);
  });
}

/** A job with its webhook and the delivery attempts the caller may see (webhookPolicy.seesAttempts), as GET /api/jobs/{id} shows it. */
async function jobBody(services: Services, principal: Principal, job: Job) {
  return toJobBody(job, await services.webhooks.attemptsOf(principal, job));
}

function sendSubtitles(reply: FastifyReply, format: 'srt' | 'vtt', segments: TranscriptSegment[]) {
  return reply.type(SUBTITLE_CONTENT_TYPES[format]).send(format === 'srt' ? toSrt(segments) : toVtt(segments));
}

/** The `Idempotency-Key` header, as the GraphQL door's idempotencyKey argument. */
function idempotencyKey(req: FastifyRequest): string | null {
  const v = req.headers['idempotency-key'];
  return typeof v === 'string' ? v : null;
}

/** The shims take a JSON object; anything else (an array, a string, nothing) is invalid input. */
function bodyObject(body: unknown): Record<string, unknown> {
  if (body === null || body === undefined) throw new AppError('INVALID_INPUT', 'Send a JSON object body.', { body: 'required' });
  if (typeof body !== 'object' || Array.isArray(body))
    throw new AppError('INVALID_INPUT', 'The body must be a JSON object.', { body: 'must be a JSON object' });
  return body as Record<string, unknown>;
}
