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
 * Fetches a format as a caller handed its URL would (with only the headers its provider reported);
 * refused that as a CDN refuses a hotlink, once more as the page's player would, with the page as
 * Referer. `referer` is that page when only the second answered: the URL needs it. `spentNothing`
 * says whether the refused fetch cost no upstream bytes: only then is it asked again, so the two
 * together read no more than one may (a source that answers, then refuses, is not read twice).
 */
export async function asCallerOrPlayer<T>(
  format: Pick<MediaFormat, 'headers'>,
  pageUrl: string | null,
  fetch: (headers: Record<string, string>) => Promise<T>,
  spentNothing: () => boolean = () => true,
): Promise<{ value: T; referer: string | null }> {
  const asCaller = mediaRequestHeaders(format, null);
  try {
    return { value: await fetch(asCaller), referer: null };
  } catch (err) {
    const asPlayer = mediaRequestHeaders(format, pageUrl);
    if (!refusedAsHotlink(err) || !spentNothing() || !asPlayer.referer || asPlayer.referer === asCaller.referer) throw err;
    return { value: await fetch(asPlayer), referer: asPlayer.referer };
  }
}

/** Whether a source refused a request as a CDN refuses a hotlink (401 or 403). */
function refusedAsHotlink(err: unknown): boolean {
  const cause = err instanceof FetchError ? err : err instanceof Error && err.cause instanceof FetchError ? err.cause : null;
  return cause?.kind === 'http_status' && (cause.status === 401 || cause.status === 403);
}

/** Marks formats as needing their page as Referer (their source refused them without it). */
export function needReferer(formats: Iterable<MediaFormat>, referer: string): void {
  for (const f of formats) f.headers = { ...f.headers, Referer: referer };
}
