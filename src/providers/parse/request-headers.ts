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
