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

/** Socket and TLS error codes, in a caller's words. */
const NETWORK_REASONS: Array<[RegExp, string]> = [
  [/^(ENOTFOUND|EAI_AGAIN|EAI_NONAME|EAI_FAIL)$/, 'its host name could not be resolved'],
  [/^ECONNREFUSED$/, 'the server refused the connection'],
  [/^(ECONNRESET|EPIPE|UND_ERR_SOCKET|UND_ERR_CLOSED)$/, 'the server closed the connection'],
  [/^(ETIMEDOUT|UND_ERR_CONNECT_TIMEOUT)$/, 'the server could not be reached in time'],
  [/^(EHOSTUNREACH|ENETUNREACH|EHOSTDOWN|ENETDOWN)$/, 'the server could not be reached'],
  [/CERT|^ERR_TLS_|^ERR_SSL_|^UNABLE_TO_(GET|VERIFY)_/, 'its TLS certificate was not accepted'],
  [/^(HPE_|UND_ERR_INFO|UND_ERR_RESPONSE)/, 'the server did not answer in HTTP'],
];

/**
 * Why a request failed, in a few words of our own: safe to show the caller who gave the URL (a
 * status code or a category, never the server's text or a header). E.g. "the server answered 503".
 */
export function failureReason(err: FetchError): string {
  switch (err.kind) {
    case 'timeout':
      return 'no complete answer in time';
    case 'too_large':
      return 'larger than the gateway reads';
    case 'too_many_redirects':
      return 'too many redirects';
    case 'http_status':
      return `the server answered ${err.status}`;
    case 'network':
      // By shape, not class: socket errors may come from another realm.
      for (let e = err.cause as { code?: unknown; cause?: unknown } | undefined; e && typeof e === 'object'; e = e.cause as typeof e) {
        const code = e.code;
        const found = typeof code === 'string' ? NETWORK_REASONS.find(([pattern]) => pattern.test(code)) : undefined;
        if (found) return found[1];
      }
      return err.cause ? 'the request failed' : err.message.replace(/^The /, 'the ').replace(/\.$/, '');
  }
}
