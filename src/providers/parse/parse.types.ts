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

/**
 * A format as providers find it: the contract's, before the gateway says how it is delivered
 * (`delivery`, set on every format of an answer by modules/streams/stream-plan.ts).
 */
export type MediaFormat = Omit<MediaFormatBody, 'delivery' | 'audio'> & {
  /** For a video variant without sound of its own: the audio track to play or mux with it. */
  audio?: MediaFormat | null;
  /** Whether `url` is the source itself (`direct`) or the gateway's stream of it (`stream`); set once the answer is planned. */
  delivery?: MediaFormatBody['delivery'];
  /**
   * Made from another format rather than offered as it is: `audio`, the sound of a video with sound
   * (mode "audio" with no audio-only format); `mute`, a video with sound without it (mode "mute"
   * with no silent format). `url` is still the source's; only the gateway's stream can deliver it.
   */
  derived?: 'audio' | 'mute';
};
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
export type ParseItem = MediaFormat & Pick<z.infer<typeof parseItemSchema>, 'title' | 'cover'> & { alternatives: MediaFormat[] };
/**
 * What a provider answers (the contract's answer before its formats' delivery is set); `items`
 * holds a multi-item post's entries (empty for a single media).
 */
export type ParseResult = Omit<ParseResultBody, 'media' | 'alternatives' | 'items'> & {
  media: MediaFormat;
  alternatives: MediaFormat[];
  items: ParseItem[];
};

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
