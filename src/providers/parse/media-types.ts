import type { MediaKind } from './parse.types.js';

/** What a MIME type or file extension says: the container name and the kind of media. */
export interface MediaType {
  container: string;
  kind: MediaKind;
}

const video = (container: string): MediaType => ({ container, kind: 'video' });
const audio = (container: string): MediaType => ({ container, kind: 'audio' });
const image = (container: string): MediaType => ({ container, kind: 'image' });

/** Container names for the MIME types pages and servers declare, including the common non-standard ones. */
const BY_MIME: Record<string, MediaType> = {
  'video/mp4': video('mp4'),
  'application/mp4': video('mp4'),
  'video/x-m4v': video('mp4'),
  'video/webm': video('webm'),
  'video/ogg': video('ogv'),
  'video/quicktime': video('mov'),
  'video/x-matroska': video('mkv'),
  'video/mp2t': video('ts'),
  'video/x-flv': video('flv'),
  'video/3gpp': video('3gp'),
  // HLS goes by many names; the playlist may hold video or audio, video is the usual case.
  'application/x-mpegurl': video('m3u8'),
  'application/vnd.apple.mpegurl': video('m3u8'),
  'audio/mpegurl': video('m3u8'),
  'audio/x-mpegurl': video('m3u8'),
  'application/dash+xml': video('mpd'),
  'video/vnd.mpeg.dash.mpd': video('mpd'),
  'audio/mpeg': audio('mp3'),
  'audio/mp3': audio('mp3'),
  'audio/mpeg3': audio('mp3'),
  'audio/mp4': audio('m4a'),
  'audio/m4a': audio('m4a'),
  'audio/x-m4a': audio('m4a'),
  'audio/aac': audio('aac'),
  'audio/x-aac': audio('aac'),
  'audio/ogg': audio('ogg'),
  'audio/opus': audio('opus'),
  'audio/webm': audio('weba'),
  'audio/wav': audio('wav'),
  'audio/wave': audio('wav'),
  'audio/x-wav': audio('wav'),
  'audio/vnd.wave': audio('wav'),
  'audio/flac': audio('flac'),
  'audio/x-flac': audio('flac'),
  'image/jpeg': image('jpg'),
  'image/jpg': image('jpg'),
  'image/pjpeg': image('jpg'),
  'image/png': image('png'),
  'image/webp': image('webp'),
  'image/gif': image('gif'),
  'image/avif': image('avif'),
  'image/svg+xml': image('svg'),
};

const BY_EXTENSION: Record<string, MediaType> = {
  mp4: video('mp4'),
  m4v: video('mp4'),
  webm: video('webm'),
  mov: video('mov'),
  mkv: video('mkv'),
  ogv: video('ogv'),
  ts: video('ts'),
  flv: video('flv'),
  '3gp': video('3gp'),
  m3u8: video('m3u8'),
  mpd: video('mpd'),
  mp3: audio('mp3'),
  m4a: audio('m4a'),
  aac: audio('aac'),
  ogg: audio('ogg'),
  oga: audio('ogg'),
  opus: audio('opus'),
  weba: audio('weba'),
  wav: audio('wav'),
  flac: audio('flac'),
  jpg: image('jpg'),
  jpeg: image('jpg'),
  png: image('png'),
  webp: image('webp'),
  gif: image('gif'),
  avif: image('avif'),
};

/** Types that say "this is a player page, not media" (og:video of embeds, video.js plugin sources). */
const PLAYER_TYPES = new Set([
  'text/html',
  'application/xhtml+xml',
  'application/x-shockwave-flash',
  'video/youtube',
  'video/x-youtube',
  'video/vimeo',
  'video/dailymotion',
]);

/** Byte-stream types that say nothing about the content, so the URL's extension may decide. */
const GENERIC_TYPES = new Set([
  '',
  'application/octet-stream',
  'binary/octet-stream',
  'application/binary',
  'application/force-download',
  'application/x-download',
]);

/** The bare, lower-case MIME type of a Content-Type value. */
export function mimeOf(contentType: string | null | undefined): string {
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

/** Whether a declared type marks a player or embed page rather than a media file. */
export function isPlayerType(contentType: string | null | undefined): boolean {
  return PLAYER_TYPES.has(mimeOf(contentType));
}

/** Whether a declared type carries no information (absent or a generic byte stream). */
export function isGenericType(contentType: string | null | undefined): boolean {
  return GENERIC_TYPES.has(mimeOf(contentType));
}

/** The lower-case file extension of a URL's path (never its query), or null. */
export function extensionOf(url: string): string | null {
  try {
    return /\.([a-z0-9]{2,4})$/.exec(new URL(url).pathname.toLowerCase())?.[1] ?? null;
  } catch {
    return null;
  }
}

/** What a file extension (or schema.org's bare encodingFormat such as "mp4") means. */
export function mediaTypeOfExtension(ext: string | null | undefined): MediaType | null {
  return ext ? (BY_EXTENSION[ext.trim().toLowerCase().replace(/^\./, '')] ?? null) : null;
}

/** What a MIME type alone says; null for non-media, player and generic types. */
export function mediaTypeOfMime(contentType: string | null | undefined): MediaType | null {
  const mime = mimeOf(contentType);
  if (BY_MIME[mime]) return BY_MIME[mime];
  if (PLAYER_TYPES.has(mime)) return null;
  const [top, sub] = mime.split('/');
  if ((top === 'video' || top === 'audio' || top === 'image') && sub) {
    // An unlisted subtype still names the kind; "x-" is the old prefix for unregistered names.
    return { container: sub.replace(/^x-/, ''), kind: top };
  }
  return null;
}

/** What a MIME type or, when the type is generic or absent, the URL's file extension says about a resource. */
export function mediaTypeOf(contentType: string | null | undefined, url: string): MediaType | null {
  const byMime = mediaTypeOfMime(contentType);
  if (byMime) return byMime;
  // Only generic types may be overruled by the extension: an HTML page at /video.mp4 is a page.
  if (!isGenericType(contentType)) return null;
  return mediaTypeOfExtension(extensionOf(url));
}

/** A height hinted by a URL or label: `720p`, `_1080.mp4`, `/480/`, `1920x1080`, `4K`. */
export function heightHint(text: string | null | undefined): number | null {
  if (!text) return null;
  const dims = /(?:^|[^0-9])(\d{3,4})x(\d{3,4})(?:[^0-9]|$)/i.exec(text);
  if (dims) return Number(dims[2]);
  // Only the usual ladder heights, bounded by non-digits, so ids and dates are not mistaken for sizes.
  const p = /(?:^|[^0-9])(4320|2160|1440|1080|720|540|480|360|240|144)p?(?:[^0-9]|$)/i.exec(text);
  if (p) return Number(p[1]);
  return /(?:^|[^0-9a-z])(4k|uhd)(?:[^0-9a-z]|$)/i.test(text) ? 2160 : null;
}
