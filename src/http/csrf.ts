import { timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors.js';

/**
 * A cookie is sent by the browser on its own, so a cookie-authenticated request that may change
 * something must also carry the session's CSRF token, which only the account area's page holds.
 */

/** The header (and, on a WebSocket, the connection parameter) the CSRF token arrives in. */
export const CSRF_HEADER = 'x-csrf-token';

/** Methods that change nothing; every other method needs the CSRF header when a cookie is the credential. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether a request with this method may change something, and so needs the CSRF token when a cookie is its credential. */
export function mayChange(method: string | undefined): boolean {
  return !SAFE_METHODS.has((method ?? '').toUpperCase());
}

/** The refusal of a cookie-authenticated change without the session's CSRF token. */
export const csrfRefused = () => new AppError('FORBIDDEN', 'Missing or wrong CSRF token.');

/** Whether the presented CSRF token is the session's, compared in constant time. */
export function csrfMatches(expected: string, presented: string | undefined): boolean {
  if (!presented) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The CSRF token a request carries, if any. */
export function csrfTokenOf(req: { headers: Record<string, string | string[] | undefined> }): string | undefined {
  const v = req.headers[CSRF_HEADER];
  return typeof v === 'string' ? v : undefined;
}
