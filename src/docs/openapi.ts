import { z } from 'zod';
import type { ErrorCode } from '../errors.js';
import { parseInputSchema } from '../modules/parse/parse.service.js';
import { transcribeInputSchema } from '../modules/transcription/transcription.service.js';
import { ACCOUNT_PATHS, OPERATOR_PATHS } from './openapi-side-paths.js';
import { STREAM_PATHS } from './openapi-stream-paths.js';
import { errorExamples, errorResponses } from './openapi-errors.js';
import { CANCELED_JOB_EXAMPLE, JOB_EXAMPLE, PARSE_EXAMPLE, SRT_EXAMPLE, TRANSCRIPTION_EXAMPLE, VTT_EXAMPLE } from './openapi-examples.js';
import { ALWAYS, LIMITED, json, ref, text } from './openapi-parts.js';
import { SCHEMAS } from './openapi-schemas.js';

/** What a parse or a transcription can be refused or fail with. */
const WORK: ErrorCode[] = [
  'INVALID_INPUT',
  'UNAUTHENTICATED',
  'INSUFFICIENT_CREDITS',
  'MEMBERSHIP_REQUIRED',
  'FORBIDDEN',
  'IDEMPOTENCY_KEY_IN_USE',
  'UNSUPPORTED_MEDIA_TYPE',
  'IDEMPOTENCY_KEY_REUSED',
  'URL_NOT_ALLOWED',
  'NO_MEDIA_FOUND',
  'CONTENT_UNAVAILABLE',
  ...ALWAYS,
  'PROVIDER_ERROR',
  'PROVIDER_UNAVAILABLE',
  'PROVIDER_TIMEOUT',
];
/** What reading one's own job data can be refused with. */
const READ: ErrorCode[] = ['UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND', ...ALWAYS];

const subtitles = {
  'application/x-subrip': { schema: text, example: SRT_EXAMPLE },
  'text/vtt': { schema: text, example: VTT_EXAMPLE },
};

/** The OpenAPI document of the REST routes, generated from the same schemas the services validate with. */
export function buildOpenApi(): Record<string, unknown> {
  // The services' own schemas, with what each field means for a reader of the reference.
  const input = (schema: z.ZodType, descriptions: Record<string, string>) => {
    const {
      $schema: _drop,
      properties,
      ...rest
    } = z.toJSONSchema(schema, { io: 'input' }) as { properties: Record<string, object> } & Record<string, unknown>;
    const described = Object.fromEntries(Object.entries(properties).map(([name, p]) => [name, { ...p, description: descriptions[name] }]));
    return { ...rest, properties: described };
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'mediagate REST API',
      version: '1.0.0',
      description: [
        'The REST routes of mediagate. POST /api/parse and POST /api/transcribe run the same operations as the GraphQL mutations parse and transcribe at /graphql (schema: schema/schema.graphql).',
        '',
        'Authenticate with `Authorization: Bearer <API key>` (`mg_live_<id>_<secret>`), or a frontend’s OpenID Connect token. Every error is one body, `{ "error": { "code", "message", "details"?, "requestId" } }`; branch on `code`.',
        '',
        'Credits: every task first holds its price (a parse 1 credit, a transcription 1 credit per started minute of media, by default), captures it on success and releases it in full on failure.',
      ].join('\n'),
    },
    // Relative: the gateway that serves this document (/docs/json) is the one it describes.
    servers: [{ url: '/', description: 'this gateway' }],
    security: [{ bearer: [] }, { sessionCookie: [] }],
    tags: [
      { name: 'media', description: 'The two operations, parse and transcribe (also at /graphql)' },
      { name: 'jobs', description: 'Tasks and their results' },
      { name: 'credits', description: 'The credit ledger' },
      { name: 'account area', description: 'Sign-in for the /account page' },
      { name: 'operators', description: 'Health, readiness and metrics: no API key, no rate limit' },
    ],
    paths: {
      '/api/parse': {
        post: {
          operationId: 'parse',
          tags: ['media'],
          summary: 'Resolve a public video-page URL into direct media and metadata',
          description:
            'quality defaults to 1080 for members and 720 otherwise; max and 1080 need a membership (403 MEMBERSHIP_REQUIRED). With an API key, parsing needs an active membership and the parse scope. Costs the configured parse price (default 1 credit), charged only on success.',
          parameters: [ref('parameters', 'IdempotencyKey'), ref('parameters', 'CsrfToken'), ref('parameters', 'RequestId')],
          requestBody: {
            required: true,
            description: 'At most 16 KiB; unknown fields are refused.',
            content: json(ref('schemas', 'ParseRequest'), {
              example: { url: 'https://video.example/watch/harbour', mode: 'auto', quality: '1080' },
            }),
          },
          responses: {
            '200': { description: 'Parsed', headers: LIMITED, content: json(ref('schemas', 'ParseResponse'), { example: PARSE_EXAMPLE }) },
            ...errorResponses(WORK, { MEMBERSHIP_REQUIRED: { message: 'Quality 1080 requires an active monthly membership.' } }),
          },
        },
      },
      '/api/transcribe': {
        post: {
          operationId: 'transcribe',
          tags: ['media'],
          summary: 'Transcribe a media URL into text with timestamped segments',
          description: [
            'The answer’s format: `?format=` (json, srt, vtt) wins; otherwise the Accept header: `application/x-subrip` (or `text/srt`) gives SRT, `text/vtt` gives WebVTT, anything else JSON. Errors are always JSON.',
            '',
            'With `Prefer: respond-async` the answer is 202 at once with the queued job and a Location to poll (GET /api/jobs/{id}); a webhookUrl in the body is sent the job when it ends.',
            '',
            'Needs an active membership and the transcribe scope. Costs 1 credit per started minute of media by default (at least 1): the hold grows once the media’s length is known, and is released in full on failure.',
          ].join('\n'),
          parameters: [
            {
              name: 'format',
              in: 'query',
              required: false,
              schema: { type: 'string', enum: ['json', 'srt', 'vtt'] },
              description: 'srt or vtt returns a subtitle file; overrides Accept',
            },
            ref('parameters', 'Prefer'),
            ref('parameters', 'IdempotencyKey'),
            ref('parameters', 'CsrfToken'),
            ref('parameters', 'RequestId'),
          ],
          requestBody: {
            required: true,
            description: 'At most 16 KiB; unknown fields are refused.',
            content: json(ref('schemas', 'TranscribeRequest'), {
              example: { mediaUrl: 'https://cdn.video.example/harbour-1080.mp4', language: 'en' },
            }),
          },
          responses: {
            '200': {
              description: 'Transcribed: JSON, or SRT / WebVTT as format or Accept asked',
              headers: LIMITED,
              content: { ...json(ref('schemas', 'TranscriptionResponse'), { example: TRANSCRIPTION_EXAMPLE }), ...subtitles },
            },
            '202': {
              description:
                'Prefer: respond-async: the job, queued; poll Location (webhook attempts are listed only for a key with the read scope)',
              headers: { ...LIMITED, Location: ref('headers', 'Location'), 'Preference-Applied': ref('headers', 'PreferenceApplied') },
              content: json(ref('schemas', 'Job'), { example: JOB_EXAMPLE }),
            },
            ...errorResponses(WORK, {
              INVALID_INPUT: {
                message: 'Invalid input: language.',
                details: { language: 'must be a BCP-47 or ISO-639-1 language code such as en or pt-BR' },
              },
              NO_MEDIA_FOUND: { message: 'The media has no audio track to transcribe.', details: undefined },
              PROVIDER_UNAVAILABLE: { message: 'No provider is configured for this operation.' },
            }),
          },
        },
      },
      '/api/jobs/{id}': {
        get: {
          operationId: 'job',
          tags: ['jobs'],
          summary: 'One of the caller’s jobs: status, progress, result or error, webhook attempts',
          description: 'Needs the read scope; no membership. Another account’s job is NOT_FOUND, as an unknown one.',
          parameters: [
            {
              name: 'id',
              in: 'path',
              required: true,
              schema: { type: 'string', format: 'uuid' },
              description: 'the job id (id of a parse or transcription answer, or a 202’s Location)',
            },
            ref('parameters', 'RequestId'),
          ],
          responses: {
            '200': { description: 'The job', headers: LIMITED, content: json(ref('schemas', 'Job'), { example: JOB_EXAMPLE }) },
            ...errorResponses(READ),
          },
        },
      },
      '/api/jobs/{id}/cancel': {
        post: {
          operationId: 'cancelJob',
          tags: ['jobs'],
          summary: 'Cancel a queued or running job: its hold is released and nothing is charged',
          description:
            'What GraphQL cancelJob does, with the same rules: needs the read scope, no membership, no body. A job that has already finished (SUCCEEDED, FAILED, CANCELED) is answered as it is, unchanged. Another account’s job is NOT_FOUND, as an unknown one.',
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' }, description: 'the job id' },
            ref('parameters', 'CsrfToken'),
            ref('parameters', 'RequestId'),
          ],
          responses: {
            '200': {
              description: 'The job after the cancel (CANCELED, creditsHeld 0), or as it finished',
              headers: LIMITED,
              content: json(ref('schemas', 'Job'), { example: CANCELED_JOB_EXAMPLE }),
            },
            ...errorResponses(READ),
          },
        },
      },
      '/api/transcriptions/{file}': {
        get: {
          operationId: 'transcriptSubtitles',
          tags: ['jobs'],
          summary: 'The subtitles of a finished transcription job: {id}.srt or {id}.vtt',
          description: 'Needs the read scope. The extension picks the format, whatever Accept says.',
          parameters: [
            {
              name: 'file',
              in: 'path',
              required: true,
              schema: { type: 'string', pattern: '^.+\\.(srt|vtt)$' },
              description: 'the job id followed by .srt or .vtt',
              example: '5d9c1e0a-7b3f-4f62-8a1d-9e4b2c6f0a13.srt',
            },
            ref('parameters', 'RequestId'),
          ],
          responses: {
            '200': { description: 'Subtitles', headers: LIMITED, content: subtitles },
            ...errorResponses(READ, { NOT_FOUND: { message: 'No finished transcription with this id.' } }),
          },
        },
      },
      '/api/credit-history.csv': {
        get: {
          operationId: 'creditHistoryCsv',
          tags: ['credits'],
          summary: 'The credit history as CSV (the creditHistory filters), newest first, streamed',
          description: 'Needs the read scope. Another account’s history is for analysts and admins (403 FORBIDDEN otherwise).',
          parameters: [
            {
              name: 'accountId',
              in: 'query',
              required: false,
              schema: { type: 'string', format: 'uuid' },
              description: 'another account (analysts and admins); default the caller’s own',
            },
            {
              name: 'from',
              in: 'query',
              required: false,
              schema: { type: 'string', format: 'date-time' },
              description: 'entries at or after this time (RFC 3339 with an offset; encode + as %2B)',
            },
            {
              name: 'to',
              in: 'query',
              required: false,
              schema: { type: 'string', format: 'date-time' },
              description: 'entries before this time',
            },
            {
              name: 'kinds',
              in: 'query',
              required: false,
              schema: { type: 'string' },
              description: 'comma-separated: GRANT, HOLD, CAPTURE, RELEASE, ADJUST, EXPIRE',
            },
            ref('parameters', 'RequestId'),
          ],
          responses: {
            '200': {
              description:
                'A header row (id,created_at,account_id,kind,amount,available_delta,held_delta,job_id,operation,reason), then one row per entry; UTF-8, ISO-8601 UTC times',
              headers: {
                ...LIMITED,
                'Content-Disposition': { schema: text, description: 'attachment; filename="credit-history-<account id>.csv"' },
              },
              content: {
                'text/csv': {
                  schema: text,
                  example:
                    'id,created_at,account_id,kind,amount,available_delta,held_delta,job_id,operation,reason\n' +
                    '42,2026-01-31T06:00:01.000Z,9a1b2c3d-0000-4000-8000-000000000001,CAPTURE,1,0,-1,0b7e2f52-4c1d-4a8e-9f3a-2d6c5b4a3e21,PARSE,\n',
                },
              },
            },
            ...errorResponses(['INVALID_INPUT', 'UNAUTHENTICATED', 'FORBIDDEN', ...ALWAYS], {
              INVALID_INPUT: {
                message: 'The credit history filters are not valid.',
                details: { from: 'must be an ISO-8601 date-time with an offset, e.g. 2026-01-31T00:00:00Z (encode + as %2B)' },
              },
              FORBIDDEN: { message: 'Only analysts and admins may read across accounts.' },
            }),
          },
        },
      },
      ...STREAM_PATHS,
      ...ACCOUNT_PATHS,
      ...OPERATOR_PATHS,
    },
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An API key (mg_live_<id>_<secret>), or a frontend’s OpenID Connect token when OIDC_ISSUER is set (with the scopes parse, transcribe and read: never keys)',
        },
        sessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: '__Host-mg_session',
          description:
            "The account area's session (POST /account/api/session or /account/api/session/oidc); used only without an Authorization header. Requests other than GET/HEAD/OPTIONS also need x-csrf-token. Named mg_session (not Secure) only outside production with a plain-http PUBLIC_URL on another host.",
        },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, when set' },
      },
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          schema: { type: 'string', minLength: 1, maxLength: 255 },
          description:
            'The same key with the same body within 24 h replays the first result and charges once; 409 IDEMPOTENCY_KEY_IN_USE while the first runs; 422 IDEMPOTENCY_KEY_REUSED with another body',
        },
        CsrfToken: {
          name: 'x-csrf-token',
          in: 'header',
          required: false,
          schema: text,
          description:
            "Required with the account area's session cookie (not with a Bearer token): the session's csrfToken; without it 403 FORBIDDEN and nothing is done",
        },
        RequestId: {
          name: 'x-request-id',
          in: 'header',
          required: false,
          schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
          description:
            'Your id for this request, kept (and echoed, logged, stored on the job) when it matches the pattern; otherwise the gateway makes one',
        },
        Prefer: {
          name: 'Prefer',
          in: 'header',
          required: false,
          schema: { type: 'string', enum: ['respond-async'] },
          description: 'respond-async (RFC 7240): answer 202 at once with the queued job instead of waiting for the transcript',
        },
      },
      headers: {
        RequestId: { schema: text, description: 'The request id: yours when given and valid, else a UUID; also in error bodies and logs' },
        RateLimit: {
          schema: text,
          description: 'limit=<n>, remaining=<n>, reset=<seconds> (IETF draft), for the most restrictive limit that applied',
          example: 'limit=120, remaining=119, reset=60',
        },
        RateLimitPolicy: { schema: text, description: '<limit>;w=60', example: '120;w=60' },
        RetryAfter: { schema: { type: 'integer' }, description: 'Whole seconds to wait' },
        Location: {
          schema: text,
          description: 'The job to poll: /api/jobs/{id}',
          example: '/api/jobs/5d9c1e0a-7b3f-4f62-8a1d-9e4b2c6f0a13',
        },
        PreferenceApplied: { schema: { type: 'string', enum: ['respond-async'] } },
      },
      examples: errorExamples(),
      schemas: {
        ParseRequest: input(parseInputSchema, {
          url: 'the public page (or direct media) URL, http(s); private and loopback addresses are refused (422 URL_NOT_ALLOWED)',
          mode: 'auto (video with its sound where there is one), audio (sound only) or mute (video without sound); default auto',
          quality:
            'the highest format at or below this height (max: the highest there is); default 1080 for members, 720 otherwise; max and 1080 need a membership',
        }),
        TranscribeRequest: input(transcribeInputSchema, {
          mediaUrl: 'the media (a file or an HLS/DASH manifest), http(s); private and loopback addresses are refused (422 URL_NOT_ALLOWED)',
          language: 'the language spoken, BCP-47 or ISO-639-1 (en, pt-BR); omitted: detected',
          webhookUrl:
            'where the job is POSTed when it ends, signed per Standard Webhooks; checked like mediaUrl; needs a job queue on this instance (503 PROVIDER_UNAVAILABLE otherwise)',
        }),
        ...SCHEMAS,
      },
    },
  };
}
