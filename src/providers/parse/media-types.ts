import type { MediaKind } from './parse.types.js';

/** Container names for the MIME types pages and servers declare. */
const BY_MIME: Record<string, { container: string; kind: MediaKind }> = {
  'video/mp4': { container: 'mp4', kind: 'video' },
  'video/webm': { container: 'webm', kind: 'video' },
  'video/ogg': { container: 'ogv', kind: 'video' },
  'video/quicktime': { container: 'mov', kind: 'video' },
  'video/x-matroska': { container: 'mkv', kind: 'video' },
  'video/mp2t': { container: 'ts', kind: 'video' },
  'application/x-mpegurl': { container: 'm3u8', kind: 'video' },
  'application/vnd.apple.mpegurl': { container: 'm3u8', kind: 'video' },
  'audio/mpegurl': { container: 'm3u8', kind: 'video' },
  'application/dash+xml': { container: 'mpd', kind: 'video' },
  'audio/mpeg': { container: 'mp3', kind: 'audio' },
  'audio/mp3': { container: 'mp3', kind: 'audio' },
  'audio/mp4': { container: 'm4a', kind: 'audio' },
  'audio/x-m4a': { container: 'm4a', kind: 'audio' },
  'audio/aac': { container: 'aac', kind: 'audio' },
  'audio/ogg': { container: 'ogg', kind: 'audio' },
  'audio/opus': { container: 'opus', kind: 'audio' },
  'audio/webm': { container: 'weba', kind: 'audio' },
  'audio/wav': { container: 'wav', kind: 'audio' },
  'audio/x-wav': { container: 'wav', kind: 'audio' },
  'audio/flac': { container: 'flac', kind: 'audio' },
  'image/jpeg': { container: 'jpg', kind: 'image' },
  'image/png': { container: 'png', kind: 'image' },
  'image/webp': { container: 'webp', kind: 'image' },
  'image/gif': { container: 'gif', kind: 'image' },
  'image/avif': { container: 'avif', kind: 'image' },
};

const BY_EXTENSION: Record<string, { container: string; kind: MediaKind }> = {
  mp4: { container: 'mp4', kind: 'video' },
  m4v: { container: 'mp4', kind: 'video' },
  webm: { container: 'webm', kind: 'video' },
  mov: { container: 'mov', kind: 'video' },
  mkv: { container: 'mkv', kind: 'video' },
  ogv: { container: 'ogv', kind: 'video' },
  m3u8: { container: 'm3u8', kind: 'video' },
  mpd: { container: 'mpd', kind: 'video' },
  mp3: { container: 'mp3', kind: 'audio' },
  m4a: { container: 'm4a', kind: 'audio' },
  aac: { container: 'aac', kind: 'audio' },
  ogg: { container: 'ogg', kind: 'audio' },
  oga: { container: 'ogg', kind: 'audio' },
  opus: { container: 'opus', kind: 'audio' },
  wav: { container: 'wav', kind: 'audio' },
  flac: { container: 'flac', kind: 'audio' },
  jpg: { container: 'jpg', kind: 'image' },
  jpeg: { container: 'jpg', kind: 'image' },
  png: { container: 'png', kind: 'image' },
  webp: { container: 'webp', kind: 'image' },
  gif: { container: 'gif', kind: 'image' },
  avif: { container: 'avif', kind: 'image' },
};

/** The bare, lower-case MIME type of a Content-Type value. */
export function mimeOf(contentType: string | null | undefined): string {
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

/** What a MIME type or, failing that, the URL's file extension says about a resource. */
export function mediaTypeOf(contentType: string | null | undefined, url: string): { container: string; kind: MediaKind } | null {
  const mime = mimeOf(contentType);
  if (BY_MIME[mime]) return BY_MIME[mime];
  if (mime.startsWith('video/')) return { container: mime.slice(6), kind: 'video' };
  if (mime.startsWith('audio/')) return { container: mime.slice(6), kind: 'audio' };
  if (mime.startsWith('image/')) return { container: mime.slice(6), kind: 'image' };
  // Only generic types may be overruled by the extension: an HTML page at /video.mp4 is a page.
  if (mime && mime !== 'application/octet-stream' && mime !== 'binary/octet-stream') return null;
  let path: string;
  try {
    path = new URL(url).pathname.toLowerCase();
  } catch {
    return null;
  }
  const ext = /\.([a-z0-9]{2,4})$/.exec(path)?.[1];
  return ext ? (BY_EXTENSION[ext] ?? null) : null;
}

/** A height hinted by a URL or label: `720p`, `_1080.mp4`, `/480/`, `1920x1080`. */
export function heightHint(text: string | null | undefined): number | null {
  if (!text) return null;
  const dims = /(?:^|[^0-9])(\d{3,4})x(\d{3,4})(?:[^0-9]|$)/.exec(text);
  if (dims) return Number(dims[2]);
  const p = /(?:^|[^0-9])(2160|1440|1080|720|540|480|360|240|144)p?(?:[^0-9]|$)/i.exec(text);
  return p ? Number(p[1]) : null;
}
