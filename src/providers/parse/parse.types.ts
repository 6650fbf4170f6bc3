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
  hasAudio: boolean;
  hasVideo: boolean;
  /** When the direct URL stops working, if the upstream says. ISO-8601. */
  expiresAt: string | null;
  /** Request headers the URL needs (e.g. Referer), if any. */
  headers: Record<string, string> | null;
  /** For a video variant without sound of its own: the audio track to play or mux with it. */
  audio?: MediaFormat | null;
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

export interface ParseResult {
  media: MediaFormat;
  alternatives: MediaFormat[];
  items: MediaFormat[];
  cover: CoverImage | null;
  metadata: MediaMetadata;
}

export interface ParseRequest {
  url: string;
  mode: ParseMode;
  quality: ParseQuality;
  signal: AbortSignal;
}

/** One upstream. Adapters never touch the database; they throw ProviderError or AppError(URL_NOT_ALLOWED). */
export interface ParseProvider {
  readonly name: string;
  parse(request: ParseRequest): Promise<ParseResult>;
}
