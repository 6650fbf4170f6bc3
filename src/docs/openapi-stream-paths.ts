import { errorResponses } from './openapi-errors.js';
import { REQUEST_ID, ref } from './openapi-parts.js';

const header = (description: string) => ({ schema: { type: 'string' }, description });

/** What a stream answers with, besides its body. */
const STREAM_HEADERS = {
  ...REQUEST_ID,
  'Content-Type': header('the media type: the source’s when passed through; video/mp4 (fragmented MP4) or the audio file’s when made'),
  'Content-Disposition': header('inline, with a file name made from the title: filename (ASCII) and filename* (RFC 8187, UTF-8)'),
  'Accept-Ranges': header('bytes when the source takes ranges (passed through); none for a stream made by ffmpeg'),
};

const TOKEN = {
  name: 'token',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^[A-Za-z0-9_-]+$' },
  description: 'the sealed token of a parse answer’s stream URL (media.url when media.delivery is "stream")',
};

/** The answers both methods share, and when. */
const REFUSALS = errorResponses(
  [
    'UNAUTHENTICATED',
    'MEMBERSHIP_REQUIRED',
    'NOT_FOUND',
    'STREAM_EXPIRED',
    'RATE_LIMITED',
    'PROVIDER_ERROR',
    'PROVIDER_UNAVAILABLE',
    'INTERNAL_ERROR',
  ],
  {
    UNAUTHENTICATED: { message: 'A valid API key is required (Authorization: Bearer <key>).' },
    NOT_FOUND: { message: 'No such stream.' },
    RATE_LIMITED: {
      message: 'This account has 4 streams open, the most it may; retry when one ends.',
      details: { retryAfterSeconds: 5, limit: 4 },
    },
    PROVIDER_ERROR: { message: 'The media could not be fetched: the source answered 403.' },
    PROVIDER_UNAVAILABLE: {
      message: 'Every stream processor of this gateway is busy; retry in a few seconds.',
      details: { retryAfterSeconds: 5, limit: 4 },
    },
  },
);

const DESCRIPTION = [
  'A parse answer’s stream URL ({PUBLIC_URL}/api/streams/{token}): the media through the gateway, for what the caller cannot fetch or play from the source itself.',
  'No Authorization header: the token, sealed by the gateway (AES-256-GCM), is the credential, and it is valid on every instance until its expiresAt (STREAM_TTL_SECONDS).',
  'At open the parse’s API key must not be revoked (401) and, when the parse needed one, the membership must still be active (403).',
  'A source passed through honours Range (206, Content-Range). A stream made by ffmpeg (audio taken out, sound left out, tracks joined, a manifest remuxed) is fragmented MP4 or the audio file, written as it is made, with no Range.',
  'Included in the parse’s credit. Bounds: STREAM_MAX_BYTES (past it the connection is cut), STREAM_MAX_PER_ACCOUNT open at once (429, Retry-After), STREAM_FFMPEG_CONCURRENCY ffmpeg processes (503, Retry-After).',
  'A source failing before the first byte is 502 PROVIDER_ERROR; after it the connection is cut, never ended as if whole.',
  'HEAD answers the same checks and headers without the media.',
].join(' ');

/** GET and HEAD /api/streams/{token}. */
export const STREAM_PATHS = {
  '/api/streams/{token}': {
    get: {
      operationId: 'stream',
      tags: ['parse'],
      summary: 'The media of a parse answer whose delivery is "stream", through the gateway',
      description: DESCRIPTION,
      security: [],
      parameters: [
        TOKEN,
        { name: 'Range', in: 'header', required: false, schema: { type: 'string' }, description: 'bytes=…, for a source passed through' },
        ref('parameters', 'RequestId'),
      ],
      responses: {
        '200': {
          description: 'The media, streamed',
          headers: STREAM_HEADERS,
          content: { '*/*': { schema: { type: 'string', format: 'binary' } } },
        },
        '206': {
          description: 'The range asked, of a source passed through',
          headers: { ...STREAM_HEADERS, 'Content-Range': header('bytes first-last/length') },
          content: { '*/*': { schema: { type: 'string', format: 'binary' } } },
        },
        ...REFUSALS,
      },
    },
  },
};
