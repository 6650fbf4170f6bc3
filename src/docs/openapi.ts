import { z } from 'zod';
import { ERROR_CATALOGUE, ERROR_CODES } from '../errors.js';
import { parseInputSchema } from '../modules/parse/parse.service.js';
import { transcribeInputSchema } from '../modules/transcription/transcription.service.js';

const nullable = (schema: object) => ({ anyOf: [schema, { type: 'null' }] });
const str = { type: 'string' };
const int = { type: 'integer' };
const num = { type: 'number' };

const mediaFormat = {
  type: 'object',
  required: ['url', 'kind', 'container', 'width', 'height', 'bitrate', 'codecs', 'durationSeconds', 'hasAudio', 'hasVideo', 'expiresAt', 'headers'],
  properties: {
    url: { type: 'string', format: 'uri' },
    kind: { type: 'string', enum: ['video', 'audio', 'image'] },
    container: nullable(str),
    width: nullable(int),
    height: nullable(int),
    bitrate: nullable({ type: 'integer', description: 'peak bits per second, when known' }),
    codecs: nullable({ type: 'string', description: 'comma-separated codecs, when known' }),
    durationSeconds: nullable(num),
    hasAudio: nullable({ type: 'boolean', description: 'whether this URL carries sound; null when nothing says' }),
    hasVideo: { type: 'boolean' },
    expiresAt: nullable({ type: 'string', format: 'date-time' }),
    headers: nullable({ type: 'object', additionalProperties: str }),
    audio: nullable({ $ref: '#/components/schemas/MediaFormat' }),
  },
};

const cover = { type: 'object', required: ['url'], properties: { url: str, width: nullable(int), height: nullable(int) } };

const parseItem = {
  allOf: [
    { $ref: '#/components/schemas/MediaFormat' },
    {
      type: 'object',
      required: ['title', 'cover', 'alternatives'],
      properties: {
        title: nullable(str),
        cover: nullable(cover),
        alternatives: { type: 'array', items: { $ref: '#/components/schemas/MediaFormat' } },
      },
    },
  ],
};

const credits = {
  type: 'object',
  required: ['charged', 'balance'],
  properties: { charged: int, balance: int },
};

const parseResponse = {
  type: 'object',
  required: ['id', 'status', 'url', 'mode', 'quality', 'media', 'alternatives', 'items', 'itemsTotal', 'cover', 'metadata', 'provider', 'credits'],
  properties: {
    id: { type: 'string', description: 'job id' },
    status: { type: 'string', enum: ['SUCCEEDED'] },
    url: str,
    mode: str,
    quality: str,
    media: { $ref: '#/components/schemas/MediaFormat' },
    alternatives: { type: 'array', items: { $ref: '#/components/schemas/MediaFormat' } },
    items: { type: 'array', items: { $ref: '#/components/schemas/ParseItem' }, description: 'multi-item posts: one entry per item' },
    itemsTotal: { type: 'integer', description: 'items the post has (0 for a single media); more than items when capped' },
    cover: nullable(cover),
    metadata: {
      type: 'object',
      properties: {
        title: nullable(str),
        author: nullable(str),
        durationSeconds: nullable(num),
        publishedAt: nullable(str),
        description: nullable(str),
        site: nullable(str),
      },
    },
    provider: str,
    credits: { $ref: '#/components/schemas/Credits' },
  },
};

const transcriptionResponse = {
  type: 'object',
  required: ['id', 'status', 'mediaUrl', 'language', 'durationSeconds', 'text', 'segments', 'provider', 'credits'],
  properties: {
    id: { type: 'string', description: 'job id' },
    status: { type: 'string', enum: ['SUCCEEDED'] },
    mediaUrl: str,
    language: nullable(str),
    durationSeconds: nullable(num),
    text: str,
    segments: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'start', 'end', 'text', 'speaker'],
        properties: {
          index: int,
          start: num,
          end: num,
          text: str,
          speaker: nullable(str),
          words: {
            type: 'array',
            description: 'word timings, when the provider gives them',
            items: { type: 'object', required: ['start', 'end', 'text'], properties: { start: num, end: num, text: str, speaker: nullable(str) } },
          },
        },
      },
    },
    provider: str,
    credits: { $ref: '#/components/schemas/Credits' },
  },
};

const errorBody = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'requestId'],
      properties: {
        code: { type: 'string', enum: ERROR_CODES },
        message: str,
        details: { type: 'object', additionalProperties: true },
        requestId: str,
      },
    },
  },
};

/** Error responses of an operation, by status, from the contract's catalogue. */
function errors(codes: (keyof typeof ERROR_CATALOGUE)[]) {
  const byStatus = new Map<number, string[]>();
  for (const code of codes) byStatus.set(ERROR_CATALOGUE[code].status, [...(byStatus.get(ERROR_CATALOGUE[code].status) ?? []), code]);
  return Object.fromEntries(
    [...byStatus.entries()].sort(([a], [b]) => a - b).map(([status, cs]) => [
      String(status),
      { description: cs.join(' | '), content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
    ]),
  );
}

const IDEMPOTENCY_HEADER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', minLength: 1, maxLength: 255 },
  description: 'The same key with the same body within 24 h replays the first result and charges once; 409 while the first runs; 422 with another body',
};

const CSRF_HEADER = {
  name: 'x-csrf-token',
  in: 'header',
  required: false,
  schema: { type: 'string' },
  description: "Required with the account area's session cookie (not with a Bearer token): the session's csrfToken; without it 403 FORBIDDEN and nothing is done",
};

const sessionResponse = {
  type: 'object',
  required: ['csrfToken', 'expiresAt', 'account'],
  properties: {
    csrfToken: { type: 'string', description: 'send it as x-csrf-token on every cookie-authenticated request that may change something' },
    expiresAt: { type: 'string', format: 'date-time' },
    account: { type: 'object', required: ['id', 'name'], properties: { id: str, name: str } },
  },
};

const sessionJson = { description: 'The session', content: { 'application/json': { schema: { $ref: '#/components/schemas/Session' } } } };

/** The account area's sign-in with a login link (`mediagate account login-link`) and its session cookie. */
const sessionPaths = {
  '/account/config.json': {
    get: {
      operationId: 'accountConfig',
      summary: 'Which sign-ins the account page offers',
      security: [],
      responses: {
        '200': {
          description: 'oidc is null unless OIDC_ISSUER and OIDC_CLIENT_ID are set',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['oidc', 'loginLinks'],
                properties: {
                  oidc: nullable({ type: 'object', required: ['issuer', 'clientId'], properties: { issuer: str, clientId: str } }),
                  loginLinks: { type: 'boolean' },
                },
              },
            },
          },
        },
      },
    },
  },
  '/account/api/session': {
    post: {
      operationId: 'startSession',
      summary: "Spend a login link's token for a session: sets the HttpOnly cookie mg_session",
      security: [],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { type: 'object', required: ['token'], properties: { token: { type: 'string', description: 'from the link: /account/#login=<token>' } } } } },
      },
      responses: {
        '200': { ...sessionJson, headers: { 'Set-Cookie': { schema: { type: 'string' }, description: 'mg_session=<id>; Path=/; HttpOnly; SameSite=Strict; Max-Age=SESSION_HOURS (Secure over https)' } } },
        ...errors(['INVALID_INPUT', 'UNAUTHENTICATED', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED']),
      },
    },
    get: {
      operationId: 'currentSession',
      summary: 'The current session (the page recovers its CSRF token after a reload)',
      security: [{ sessionCookie: [] }],
      responses: { '200': sessionJson, ...errors(['UNAUTHENTICATED', 'RATE_LIMITED']) },
    },
  },
  '/account/api/logout': {
    post: {
      operationId: 'endSession',
      summary: 'End the session on the server and clear the cookie (204 also when there was none)',
      security: [{ sessionCookie: [] }],
      parameters: [{ ...CSRF_HEADER, description: "the session's csrfToken; required when the cookie names a live session" }],
      responses: { '204': { description: 'Signed out' }, ...errors(['FORBIDDEN', 'RATE_LIMITED']) },
    },
  },
};

const COMMON = ['INVALID_INPUT', 'IDEMPOTENCY_KEY_IN_USE', 'IDEMPOTENCY_KEY_REUSED', 'RATE_LIMITED', 'UNAUTHENTICATED', 'INSUFFICIENT_CREDITS', 'MEMBERSHIP_REQUIRED', 'FORBIDDEN', 'UNSUPPORTED_MEDIA_TYPE', 'URL_NOT_ALLOWED', 'NO_MEDIA_FOUND', 'CONTENT_UNAVAILABLE', 'INTERNAL_ERROR', 'PROVIDER_ERROR', 'PROVIDER_UNAVAILABLE', 'PROVIDER_TIMEOUT'] as const;

/** The OpenAPI document of the REST shims, generated from the same schemas the services validate with. */
export function buildOpenApi(): Record<string, unknown> {
  const input = (schema: z.ZodType) => {
    const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
    return rest;
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'mediagate REST API',
      version: '1.0.0',
      description: 'The REST shims of mediagate. They run the same operations as the GraphQL mutations parse and transcribe.',
    },
    servers: [{ url: 'http://localhost:4000' }],
    security: [{ bearer: [] }, { sessionCookie: [] }],
    paths: {
      '/api/parse': {
        post: {
          operationId: 'parse',
          summary: 'Resolve a public video-page URL into direct media and metadata',
          parameters: [IDEMPOTENCY_HEADER, CSRF_HEADER],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/ParseRequest' } } } },
          responses: {
            '200': { description: 'Parsed', content: { 'application/json': { schema: { $ref: '#/components/schemas/ParseResponse' } } } },
            ...errors([...COMMON]),
          },
        },
      },
      '/api/transcribe': {
        post: {
          operationId: 'transcribe',
          summary: 'Transcribe a media URL into text with timestamped segments',
          parameters: [
            { name: 'format', in: 'query', required: false, schema: { type: 'string', enum: ['json', 'srt', 'vtt'] }, description: 'srt or vtt returns a subtitle file; Accept: application/x-subrip or text/vtt does the same' },
            IDEMPOTENCY_HEADER,
            CSRF_HEADER,
          ],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/TranscribeRequest' } } } },
          responses: {
            '200': {
              description: 'Transcribed',
              content: {
                'application/json': { schema: { $ref: '#/components/schemas/TranscriptionResponse' } },
                'application/x-subrip': { schema: { type: 'string' } },
                'text/vtt': { schema: { type: 'string' } },
              },
            },
            ...errors([...COMMON]),
          },
        },
      },
      '/api/transcriptions/{file}': {
        get: {
          operationId: 'transcriptSubtitles',
          summary: 'The subtitles of a finished transcription job: {id}.srt or {id}.vtt',
          parameters: [{ name: 'file', in: 'path', required: true, schema: { type: 'string', pattern: '^.+\\.(srt|vtt)$' } }],
          responses: {
            '200': { description: 'Subtitles', content: { 'application/x-subrip': { schema: { type: 'string' } }, 'text/vtt': { schema: { type: 'string' } } } },
            ...errors(['UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND']),
          },
        },
      },
      '/api/credit-history.csv': {
        get: {
          operationId: 'creditHistoryCsv',
          summary: 'The credit history as CSV (the creditHistory filters), newest first, streamed',
          parameters: [
            { name: 'accountId', in: 'query', required: false, schema: { type: 'string', format: 'uuid' }, description: 'another account (analysts and admins); default the caller’s own' },
            { name: 'from', in: 'query', required: false, schema: { type: 'string', format: 'date-time' }, description: 'entries at or after this time' },
            { name: 'to', in: 'query', required: false, schema: { type: 'string', format: 'date-time' }, description: 'entries before this time' },
            { name: 'kinds', in: 'query', required: false, schema: { type: 'string' }, description: 'comma-separated: GRANT, HOLD, CAPTURE, RELEASE, ADJUST, EXPIRE' },
          ],
          responses: {
            '200': {
              description: 'A header row (id,created_at,account_id,kind,amount,available_delta,held_delta,job_id,operation,reason), then one row per entry; UTF-8, ISO-8601 UTC times',
              content: { 'text/csv': { schema: { type: 'string' } } },
            },
            ...errors(['INVALID_INPUT', 'UNAUTHENTICATED', 'FORBIDDEN', 'RATE_LIMITED']),
          },
        },
      },
      ...sessionPaths,
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key: mg_live_<id>_<secret>' },
        sessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: 'mg_session',
          description: "The account area's session (POST /account/api/session); used only without an Authorization header. Requests other than GET/HEAD/OPTIONS also need x-csrf-token.",
        },
      },
      schemas: {
        ParseRequest: input(parseInputSchema),
        TranscribeRequest: input(transcribeInputSchema),
        MediaFormat: mediaFormat,
        ParseItem: parseItem,
        Credits: credits,
        ParseResponse: parseResponse,
        TranscriptionResponse: transcriptionResponse,
        Session: sessionResponse,
        Error: errorBody,
      },
    },
  };
}
