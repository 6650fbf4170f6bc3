import { heightHint, mediaTypeOf } from './media-types.js';
import { mediaFormat, type MediaFormat } from './parse.types.js';

/**
 * When a fetched URL is itself media (video/*, audio/*, image/*, an HLS or DASH manifest, or a media
 * path such as .mp4/.m3u8 served as a generic byte stream), its format; null for pages and other text.
 */
export function classifyDirectMedia(contentType: string | null, url: string): MediaFormat | null {
  const type = mediaTypeOf(contentType, url);
  if (!type) return null;
  let height: number | null = null;
  if (type.kind === 'video') {
    try {
      // Servers rarely say the size; a CDN path like /clip_720p.mp4 often does.
      height = heightHint(new URL(url).pathname);
    } catch {
      height = null;
    }
  }
  // Whether a video file has sound is unknown until it is probed.
  return mediaFormat({
    url,
    kind: type.kind,
    container: type.container,
    height,
    hasAudio: type.kind === 'audio' ? true : type.kind === 'image' ? false : null,
  });
}
