import { FetchError } from '../../net/fetch-error.js';
import type { MediaFormat } from './parse.types.js';

/**
 * The request headers a format is fetched with after its page: those the provider reported (yt-dlp's
 * http_headers, names in lower case), and the page as Referer unless they name one, as the page's own
 * player would send it. Hotlink-protected CDNs answer 403 without it. A URL given alone has no page.
 */
export function mediaRequestHeaders(format: Pick<MediaFormat, 'headers'>, pageUrl: string | null): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(format.headers ?? {})) headers[name.toLowerCase()] = value;
  if (pageUrl) headers.referer ??= pageUrl;
  return headers;
}

/**
 * Whether a source refused a request as a CDN refuses a hotlink (401 or 403): asked again as the
 * page's player would (with the page as Referer), it may answer, and then the URL needs its page.
 */
export function refusedAsHotlink(err: unknown): boolean {
  const cause = err instanceof FetchError ? err : err instanceof Error && err.cause instanceof FetchError ? err.cause : null;
  return cause?.kind === 'http_status' && (cause.status === 401 || cause.status === 403);
}

/** Marks formats as needing their page as Referer (their source refused them without it). */
export function needReferer(formats: Iterable<MediaFormat>, referer: string): void {
  for (const f of formats) f.headers = { ...f.headers, Referer: referer };
}
