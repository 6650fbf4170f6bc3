import type { z } from 'zod';
import type {
  coverSchema,
  MediaFormatBody,
  metadataSchema,
  PARSE_MODES,
  PARSE_QUALITIES,
  ParseResultBody,
  parseItemSchema,
} from '../../types/contract/parse.js';

/**
 * The vocabulary and result shape every parse provider maps its upstream's answer onto: the
 * contract's (src/types/contract/parse.ts), whose zod schemas also give the OpenAPI document and the
 * REST serializer.
 */
export { PARSE_MODES, PARSE_QUALITIES } from '../../types/contract/parse.js';
export type ParseMode = (typeof PARSE_MODES)[number];
export type ParseQuality = (typeof PARSE_QUALITIES)[number];

/** A format: a URL and what is known of it (null: unknown, never a guess); `audio` is a video variant's separate sound. */
export type MediaFormat = MediaFormatBody;
export type MediaKind = MediaFormat['kind'];

/** A format with only what must be known; the rest unknown (null). */
export function mediaFormat({ url, kind, ...known }: Pick<MediaFormat, 'url' | 'kind'> & Partial<MediaFormat>): MediaFormat {
  return {
    url,
    kind,
    container: null,
    width: null,
    height: null,
    bitrate: null,
    codecs: null,
    durationSeconds: null,
    hasAudio: kind === 'audio' ? true : null,
    hasVideo: kind === 'video',
    expiresAt: null,
    headers: null,
    ...known,
  };
}

export type CoverImage = z.infer<typeof coverSchema>;
export type MediaMetadata = z.infer<typeof metadataSchema>;
/** One entry of a multi-item post (gallery): its chosen format, its other formats, its own title and picture. */
export type ParseItem = z.infer<typeof parseItemSchema>;
/** What a provider answers; `items` holds a multi-item post's entries (empty for a single media). */
export type ParseResult = ParseResultBody;

export interface ParseRequest {
  url: string;
  mode: ParseMode;
  quality: ParseQuality;
  signal: AbortSignal;
  /** Whose parse this is (an account id, nothing more): what a provider spends on it may be capped per account. */
  accountId: string;
}

/** One upstream. Adapters never touch the database; they throw ProviderError or AppError(URL_NOT_ALLOWED). */
export interface ParseProvider {
  readonly name: string;
  parse(request: ParseRequest): Promise<ParseResult>;
}
