/** What went wrong with an outgoing request, for the provider to map onto a caller-facing code. */
export type FetchErrorKind = 'timeout' | 'too_large' | 'network' | 'too_many_redirects' | 'http_status';

/** A failed outgoing request. Messages never include request headers (they may hold secrets). */
export class FetchError extends Error {
  constructor(
    readonly kind: FetchErrorKind,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'FetchError';
  }
}
