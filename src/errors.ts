/**
 * The one error type of the service. Services throw an AppError with a code from the catalogue;
 * each transport maps it (REST: status + error body, GraphQL: extensions.code).
 */
export const ERROR_CATALOGUE = {
  INVALID_INPUT: { status: 400, message: 'The request is not valid.' },
  UNAUTHENTICATED: { status: 401, message: 'A valid API key is required (Authorization: Bearer <key>).' },
  INSUFFICIENT_CREDITS: { status: 402, message: 'Not enough credits for this operation.' },
  MEMBERSHIP_REQUIRED: { status: 403, message: 'An active monthly membership is required.' },
  FORBIDDEN: { status: 403, message: 'You may not see or do this.' },
  NOT_FOUND: { status: 404, message: 'Not found.' },
  IDEMPOTENCY_KEY_IN_USE: { status: 409, message: 'A request with this idempotency key is still running.' },
  STREAM_EXPIRED: { status: 410, message: 'This stream URL has expired: parse the page again for a new one.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'The request body must be JSON (Content-Type: application/json).' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, message: 'This idempotency key was used with a different request.' },
  URL_NOT_ALLOWED: { status: 422, message: 'The URL points at an address that may not be fetched.' },
  NO_MEDIA_FOUND: { status: 422, message: 'No media could be found at this URL.' },
  CONTENT_UNAVAILABLE: { status: 422, message: 'The media exists but cannot be retrieved.' },
  RATE_LIMITED: { status: 429, message: 'Too many requests.' },
  INTERNAL_ERROR: { status: 500, message: 'An internal error occurred.' },
  PROVIDER_ERROR: { status: 502, message: 'Every configured provider failed.' },
  PROVIDER_UNAVAILABLE: { status: 503, message: 'No provider is available right now.' },
  PROVIDER_TIMEOUT: { status: 504, message: 'The providers did not answer in time.' },
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;
export const ERROR_CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message?: string, details?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(message ?? ERROR_CATALOGUE[code].message, options);
    this.name = 'AppError';
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ERROR_CATALOGUE[this.code].status;
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

/**
 * A provider's failure. Its message is for logs only: callers see the mapped AppError, never the
 * upstream's text or credentials.
 */
export class ProviderError extends Error {
  /** Why, in our own words, safe to show the caller (no upstream text): e.g. "the page could not be fetched (the server answered 503)". */
  readonly reason?: string;

  constructor(
    readonly provider: string,
    /** What the failure means for the caller; the registry picks the caller-facing code from it. */
    readonly kind: 'failed' | 'timeout' | 'no_media' | 'unavailable_content' | 'too_large' | 'circuit_open',
    message: string,
    options?: { cause?: unknown; reason?: string },
  ) {
    super(message, options);
    this.name = 'ProviderError';
    this.reason = options?.reason;
  }
}
