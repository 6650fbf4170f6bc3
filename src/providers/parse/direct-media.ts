import { mediaTypeOf } from './media-types.js';
import type { MediaFormat } from './parse.types.js';

/** When a fetched URL is itself media (or a manifest), its format; null for pages and other text. */
export function classifyDirectMedia(contentType: string | null, url: string): MediaFormat | null {
  const type = mediaTypeOf(contentType, url);
  if (!type) return null;
  return {
    url,
    kind: type.kind,
    container: type.container,
    width: null,
    height: null,
    hasAudio: type.kind !== 'image',
    hasVideo: type.kind === 'video',
    expiresAt: null,
    headers: null,
  };
}
