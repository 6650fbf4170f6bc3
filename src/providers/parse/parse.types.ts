/** The vocabulary and result shape every parse provider maps its upstream's answer onto. */
export const PARSE_MODES = ['auto', 'audio', 'mute'] as const;
export type ParseMode = (typeof PARSE_MODES)[number];
export const PARSE_QUALITIES = ['max', '1080', '720', '480'] as const;
export type ParseQuality = (typeof PARSE_QUALITIES)[number];

export type MediaKind = 'video' | 'audio' | 'image';

export interface MediaFormat {
  url: string;
  kind: MediaKind;
  /** Container or file type, e.g. mp4, webm, m3u8, mpd, mp3, jpg; null when unknown. */
  container: string | null;
  width: number | null;
  height: number | null;
  /** Peak bits per second, when a manifest, a probe or the upstream says. */
  bitrate: number | null;
  /** RFC 6381 codec strings joined by commas (e.g. "avc1.64001f,mp4a.40.2"), or ffprobe's codec names; null when unknown. */
  codecs: string | null;
  /** Length in seconds, when known. */
  durationSeconds: number | null;
  /** Whether the URL itself carries sound: null when nothing says (no codecs, no probe), never a guess. */
  hasAudio: boolean | null;
  hasVideo: boolean;
  /** When the direct URL stops working, if the upstream says. ISO-8601. */
  expiresAt: string | null;
  /** Request headers the URL needs (e.g. Referer), if any. */
  headers: Record<string, string> | null;
  /** For a video variant without sound of its own: the audio track to play or mux with it. */
  audio?: MediaFormat | null;
  /** Whether `url` is the source itself (`direct`) or the gateway's stream of it (`stream`); set once the answer is planned. */
  delivery?: 'direct' | 'stream';
  /**
   * Made from another format rather than offered as it is: `audio`, the sound of a video with sound
   * (mode "audio" with no audio-only format); `mute`, a video with sound without it (mode "mute"
   * with no silent format). `url` is still the source's; only the gateway's stream can deliver it.
   */
  derived?: 'audio' | 'mute';
}

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

export interface CoverImage {
  url: string;
  width: number | null;
  height: number | null;
}

export interface MediaMetadata {
  title: string | null;
  author: string | null;
  durationSeconds: number | null;
  publishedAt: string | null;
  description: string | null;
  site: string | null;
}

/** One entry of a multi-item post (gallery): its chosen format, its other formats, its own title and picture. */
export interface ParseItem extends MediaFormat {
  title: string | null;
  cover: CoverImage | null;
  alternatives: MediaFormat[];
}

export interface ParseResult {
  media: MediaFormat;
  alternatives: MediaFormat[];
  /** Multi-item posts: one entry per item, in page order (empty for a single media). */
  items: ParseItem[];
  /** How many items the post has; more than items.length when the list was capped. */
  itemsTotal: number;
  cover: CoverImage | null;
  metadata: MediaMetadata;
}

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
