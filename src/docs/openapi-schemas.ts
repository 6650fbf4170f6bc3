import { ERROR_CODES } from '../errors.js';
import { JOB_STATUSES } from '../modules/jobs/job.entity.js';

/** The response bodies of the OpenAPI document (components.schemas), as the REST shims send them. */

export const nullable = (schema: object) => ({ anyOf: [schema, { type: 'null' }] });
const str = { type: 'string' };
const int = { type: 'integer' };
const num = { type: 'number' };
const dateTime = { type: 'string', format: 'date-time' };

const mediaFormat = {
  type: 'object',
  description: 'A direct media URL and what is known of it; null means unknown, never a guess.',
  required: [
    'url',
    'kind',
    'container',
    'width',
    'height',
    'bitrate',
    'codecs',
    'durationSeconds',
    'hasAudio',
    'hasVideo',
    'expiresAt',
    'headers',
    'delivery',
  ],
  properties: {
    url: {
      type: 'string',
      format: 'uri',
      description:
        'the direct media URL (a file, or an HLS/DASH manifest), or with delivery "stream" the gateway’s stream URL ({PUBLIC_URL}/api/streams/{token})',
    },
    kind: { type: 'string', enum: ['video', 'audio', 'image'] },
    container: nullable({ type: 'string', description: 'container or file type: mp4, webm, m3u8, mpd, mp3, jpg, ...' }),
    width: nullable({ type: 'integer', description: 'pixels' }),
    height: nullable({ type: 'integer', description: 'pixels' }),
    bitrate: nullable({ type: 'integer', description: 'peak bits per second, when known' }),
    codecs: nullable({ type: 'string', description: 'RFC 6381 codec strings (or ffprobe names), comma-separated, when known' }),
    durationSeconds: nullable({ type: 'number', description: 'length in seconds, when known' }),
    hasAudio: nullable({ type: 'boolean', description: 'whether this URL carries sound; null when nothing says' }),
    hasVideo: { type: 'boolean' },
    expiresAt: nullable({ type: 'string', format: 'date-time', description: 'when the direct URL stops working, if the site says' }),
    headers: nullable({ type: 'object', additionalProperties: str, description: 'request headers the URL needs (e.g. Referer)' }),
    delivery: {
      type: 'string',
      enum: ['direct', 'stream'],
      description:
        'direct: url is the source itself; stream: url is the gateway’s signed stream (audio taken out, sound left out, separate tracks joined, headers sent for you, or stream: true), valid until expiresAt',
    },
    audio: nullable({
      $ref: '#/components/schemas/MediaFormat',
      description: 'for a video variant without sound of its own (HLS/DASH): the audio track to play or mux with it',
    }),
  },
};

const cover = {
  type: 'object',
  description: 'The picture the page shows for the media',
  required: ['url', 'width', 'height'],
  properties: { url: str, width: nullable(int), height: nullable(int) },
};

const parseItem = {
  description: 'One item of a multi-item post (gallery, playlist): its chosen format, its own title and picture, its other formats',
  allOf: [
    { $ref: '#/components/schemas/MediaFormat' },
    {
      type: 'object',
      required: ['title', 'cover', 'alternatives'],
      properties: {
        title: nullable(str),
        cover: nullable({ $ref: '#/components/schemas/Cover' }),
        alternatives: { type: 'array', items: { $ref: '#/components/schemas/MediaFormat' } },
      },
    },
  ],
};

const credits = {
  type: 'object',
  description: 'What the task charged and the available balance after it (whole credits)',
  required: ['charged', 'balance'],
  properties: { charged: int, balance: int },
};

const parseResponse = {
  type: 'object',
  required: [
    'id',
    'status',
    'url',
    'mode',
    'quality',
    'media',
    'alternatives',
    'items',
    'itemsTotal',
    'cover',
    'metadata',
    'provider',
    'credits',
  ],
  properties: {
    id: { type: 'string', format: 'uuid', description: 'the job id (GET /api/jobs/{id})' },
    status: { type: 'string', enum: ['SUCCEEDED'] },
    url: { type: 'string', description: 'the page URL, normalised' },
    mode: { type: 'string', enum: ['auto', 'audio', 'mute'] },
    quality: { type: 'string', enum: ['max', '1080', '720', '480'], description: 'the quality applied (the default when none was asked)' },
    media: { $ref: '#/components/schemas/MediaFormat' },
    alternatives: {
      type: 'array',
      items: { $ref: '#/components/schemas/MediaFormat' },
      description: 'the other formats, same shape as media',
    },
    items: {
      type: 'array',
      items: { $ref: '#/components/schemas/ParseItem' },
      description: 'multi-item posts: one entry per item, in page order (empty for a single media)',
    },
    itemsTotal: {
      type: 'integer',
      description: 'items the post has (0 for a single media); more than items when capped (PARSE_MAX_ITEMS)',
    },
    cover: nullable({ $ref: '#/components/schemas/Cover' }),
    metadata: {
      type: 'object',
      required: ['title', 'author', 'durationSeconds', 'publishedAt', 'description', 'site'],
      properties: {
        title: nullable(str),
        author: nullable(str),
        durationSeconds: nullable(num),
        publishedAt: nullable({ type: 'string', description: 'ISO-8601, as the page gives it' }),
        description: nullable(str),
        site: nullable({ type: 'string', description: 'the site name, e.g. from og:site_name' }),
      },
    },
    provider: { type: 'string', description: 'the parse provider that answered: builtin, cobalt or ytdlp' },
    credits: { $ref: '#/components/schemas/Credits' },
  },
};

const word = {
  type: 'object',
  required: ['start', 'end', 'text'],
  properties: {
    start: { type: 'number', description: 'seconds from the start of the media' },
    end: { type: 'number', description: 'seconds from the start of the media' },
    text: str,
    speaker: nullable(str),
  },
};

const transcriptionResponse = {
  type: 'object',
  required: ['id', 'status', 'mediaUrl', 'language', 'durationSeconds', 'text', 'segments', 'provider', 'credits'],
  properties: {
    id: { type: 'string', format: 'uuid', description: 'the job id (GET /api/jobs/{id}, GET /api/transcriptions/{id}.srt)' },
    status: { type: 'string', enum: ['SUCCEEDED'] },
    mediaUrl: str,
    language: nullable({ type: 'string', description: 'ISO-639-1 code of the speech, when known' }),
    durationSeconds: nullable({ type: 'number', description: 'length of the media in seconds' }),
    text: { type: 'string', description: 'the whole transcript' },
    segments: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'start', 'end', 'text', 'speaker'],
        properties: {
          index: { type: 'integer', description: '1-based position' },
          start: { type: 'number', description: 'seconds from the start of the media' },
          end: { type: 'number', description: 'seconds from the start of the media' },
          text: str,
          speaker: nullable({ type: 'string', description: 'speaker label, when the provider tells speakers apart' }),
          words: { type: 'array', description: 'word timings, when the provider gives them', items: word },
        },
      },
    },
    provider: { type: 'string', description: 'the transcription provider that answered: openai, deepgram, assemblyai or local' },
    credits: { $ref: '#/components/schemas/Credits' },
  },
};

const webhookAttempt = {
  type: 'object',
  required: ['attempt', 'eventId', 'eventType', 'statusCode', 'error', 'durationMs', 'createdAt'],
  properties: {
    attempt: { type: 'integer', description: '1 for the first delivery' },
    eventId: { type: 'string', description: 'the webhook-id header: the same on every retry of one event' },
    eventType: { type: 'string', enum: ['job.succeeded', 'job.failed', 'job.canceled'] },
    statusCode: nullable({ type: 'integer', description: 'what the receiver answered; null when it could not be reached' }),
    error: nullable({ type: 'string', description: 'why the attempt failed, in our words' }),
    durationMs: int,
    createdAt: dateTime,
  },
};

const job = {
  type: 'object',
  description: 'A parse or transcription task, as GET /api/jobs/{id} shows it and webhooks deliver it',
  required: [
    'id',
    'operation',
    'status',
    'progress',
    'input',
    'result',
    'error',
    'requestId',
    'provider',
    'creditsHeld',
    'creditsCharged',
    'streamedBytes',
    'createdAt',
    'startedAt',
    'finishedAt',
    'deadlineAt',
    'webhook',
  ],
  properties: {
    id: { type: 'string', format: 'uuid' },
    operation: { type: 'string', enum: ['PARSE', 'TRANSCRIBE'] },
    status: { type: 'string', enum: [...JOB_STATUSES], description: 'QUEUED → RUNNING → SUCCEEDED | FAILED, or CANCELED' },
    progress: { type: 'number', minimum: 0, maximum: 1, description: 'share of the media done, 0 to 1' },
    input: { type: 'object', additionalProperties: true, description: 'the request body, as validated' },
    result: nullable({
      type: 'object',
      additionalProperties: true,
      description:
        'once SUCCEEDED: exactly the body the waiting call answers (ParseResponse or TranscriptionResponse), credits.balance as at the capture; null before',
    }),
    error: nullable({
      type: 'object',
      description: 'once FAILED or CANCELED: why, with a code from the error table (CANCELED for a job the caller canceled)',
      required: ['code', 'message'],
      properties: { code: { type: 'string', enum: [...ERROR_CODES, 'CANCELED'] }, message: str },
    }),
    requestId: nullable({ type: 'string', description: 'the x-request-id of the request that opened the job' }),
    provider: nullable({ type: 'string', description: 'the provider that did the work, once known' }),
    creditsHeld: { type: 'integer', description: 'credits on hold while the job is QUEUED or RUNNING; 0 after' },
    creditsCharged: { type: 'integer', description: 'credits captured on success; 0 otherwise' },
    streamedBytes: {
      type: 'integer',
      description: 'bytes the gateway streamed for this parse’s stream URLs (delivery "stream"), added as each stream ends; 0 otherwise',
    },
    createdAt: dateTime,
    startedAt: nullable(dateTime),
    finishedAt: nullable(dateTime),
    deadlineAt: { type: 'string', format: 'date-time', description: 'past it the job fails (PROVIDER_TIMEOUT) and its hold is released' },
    webhook: nullable({
      type: 'object',
      description:
        'the webhookUrl the job was started with and each delivery attempt so far (attempts need the read scope: listed empty for a key without it); null without one',
      required: ['url', 'attempts'],
      properties: { url: str, attempts: { type: 'array', items: { $ref: '#/components/schemas/WebhookAttempt' } } },
    }),
  },
};

const errorBody = {
  type: 'object',
  description: 'The one error body of every REST route',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'requestId'],
      properties: {
        code: { type: 'string', enum: ERROR_CODES, description: 'stable; branch on it (the message may change)' },
        message: { type: 'string', description: 'for people' },
        details: {
          type: 'object',
          additionalProperties: true,
          description: 'per code: the bad fields (INVALID_INPUT), required and available (INSUFFICIENT_CREDITS), ...',
        },
        requestId: { type: 'string', description: 'the x-request-id of this response, to quote in a support request' },
      },
    },
  },
};

const session = {
  type: 'object',
  required: ['csrfToken', 'expiresAt', 'account'],
  properties: {
    csrfToken: { type: 'string', description: 'send it as x-csrf-token on every cookie-authenticated request that may change something' },
    expiresAt: dateTime,
    account: { type: 'object', required: ['id', 'name'], properties: { id: { type: 'string', format: 'uuid' }, name: str } },
  },
};

const readiness = {
  type: 'object',
  required: ['status'],
  properties: {
    status: { type: 'string', enum: ['ready', 'unavailable'] },
    reason: { type: 'string', description: 'what is not ready, e.g. database' },
  },
};

export const SCHEMAS = {
  MediaFormat: mediaFormat,
  Cover: cover,
  ParseItem: parseItem,
  Credits: credits,
  ParseResponse: parseResponse,
  TranscriptionResponse: transcriptionResponse,
  Job: job,
  WebhookAttempt: webhookAttempt,
  Session: session,
  Error: errorBody,
  Readiness: readiness,
};
