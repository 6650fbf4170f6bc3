import { ERROR_CATALOGUE, ERROR_CODES, type ErrorCode } from '../errors.js';

/** An example of one error body: the message and details a caller would see. */
export interface ErrorExample {
  message?: string;
  details?: Record<string, unknown>;
}

/** When each code is answered (CONTRACT.md's table), and a typical body, as the services word them. */
const TYPICAL: Record<ErrorCode, { when: string } & ErrorExample> = {
  INVALID_INPUT: {
    when: 'validation failed; details names each bad field',
    message: 'Invalid input: url.',
    details: { url: 'must be an absolute http(s) URL' },
  },
  UNAUTHENTICATED: { when: 'missing, malformed, unknown or revoked key (one body for all)' },
  INSUFFICIENT_CREDITS: {
    when: 'not enough available credits; nothing was charged',
    message: 'This operation needs 2 credit(s); 1 available.',
    details: { required: 2, available: 1 },
  },
  MEMBERSHIP_REQUIRED: { when: 'no active membership, or a members-only quality (max, 1080)' },
  FORBIDDEN: {
    when: 'the key lacks the scope, the data is another account’s, or a session cookie came without its CSRF token',
    message: 'This API key lacks the "read" scope.',
  },
  NOT_FOUND: { when: 'no such job visible to the caller', message: 'No such job.' },
  IDEMPOTENCY_KEY_IN_USE: { when: 'a request with this Idempotency-Key is still running' },
  STREAM_EXPIRED: { when: 'a stream URL past its expiresAt (STREAM_TTL_SECONDS after the parse); parse again for a new one' },
  UNSUPPORTED_MEDIA_TYPE: { when: 'the Content-Type is not application/json' },
  IDEMPOTENCY_KEY_REUSED: { when: 'this Idempotency-Key was used with another body' },
  URL_NOT_ALLOWED: {
    when: 'the URL points at a private, loopback, link-local or otherwise blocked address',
    message: 'The URL is not allowed: it points at a private, loopback or reserved address.',
  },
  NO_MEDIA_FOUND: {
    when: 'the page holds no media any provider could resolve',
    details: { attempts: [{ provider: 'builtin', outcome: 'no_media' }] },
  },
  CONTENT_UNAVAILABLE: {
    when: 'the media exists but cannot be had: private, removed, region- or age-restricted, live',
    message: 'The media exists but cannot be retrieved (private, removed, restricted or live).',
    details: { attempts: [{ provider: 'ytdlp', outcome: 'unavailable_content' }] },
  },
  RATE_LIMITED: {
    when: 'per-key or per-address limit; retry after Retry-After seconds',
    message: 'Too many requests; retry in 17 s.',
    details: { retryAfterSeconds: 17, limit: 120, windowSeconds: 60 },
  },
  INTERNAL_ERROR: { when: 'a bug; logged with the request id' },
  PROVIDER_ERROR: {
    when: 'every configured provider failed; nothing was charged',
    details: {
      attempts: [
        { provider: 'builtin', outcome: 'failed' },
        { provider: 'cobalt', outcome: 'failed' },
      ],
    },
  },
  PROVIDER_UNAVAILABLE: { when: 'no provider configured, or every provider paused after repeated failures' },
  PROVIDER_TIMEOUT: {
    when: 'the providers did not answer in time (PARSE_TIMEOUT_SECONDS, TRANSCRIBE_TIMEOUT_SECONDS); the hold is released',
  },
};

const EXAMPLE_REQUEST_ID = '6f1d2c3b-8a47-4e0e-9d55-3c2b1a0f9e87';

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/**
 * The error responses of one operation, by status: each with the one error body and an example
 * of it for every code the operation may answer with that status: the typical one by reference,
 * or, where `examples` says how the operation words it, its own.
 */
export function errorResponses(
  codes: readonly ErrorCode[],
  examples: Partial<Record<ErrorCode, ErrorExample>> = {},
): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_CATALOGUE[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, forStatus]) => [
        String(status),
        {
          description: forStatus.map((code) => `${code}: ${TYPICAL[code].when}`).join('; '),
          headers: {
            'x-request-id': headerRef('RequestId'),
            ...(status === 429
              ? {
                  'Retry-After': headerRef('RetryAfter'),
                  RateLimit: headerRef('RateLimit'),
                  'RateLimit-Policy': headerRef('RateLimitPolicy'),
                }
              : {}),
          },
          content: {
            'application/json': {
              schema: { $ref: '#/components/schemas/Error' },
              examples: Object.fromEntries(
                forStatus.map((code) => [
                  code,
                  examples[code]
                    ? { summary: TYPICAL[code].when, value: errorBody(code, { ...TYPICAL[code], ...examples[code] }) }
                    : { $ref: `#/components/examples/${code}` },
                ]),
              ),
            },
          },
        },
      ]),
  );
}

/** The typical body of each code (components.examples), which operations refer to unless they word it their own way. */
export function errorExamples(): Record<ErrorCode, { summary: string; value: unknown }> {
  return Object.fromEntries(
    ERROR_CODES.map((code) => [code, { summary: TYPICAL[code].when, value: errorBody(code, TYPICAL[code]) }]),
  ) as Record<ErrorCode, { summary: string; value: unknown }>;
}

function errorBody(code: ErrorCode, { message, details }: ErrorExample) {
  return {
    error: { code, message: message ?? ERROR_CATALOGUE[code].message, ...(details ? { details } : {}), requestId: EXAMPLE_REQUEST_ID },
  };
}
