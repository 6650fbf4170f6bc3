/** The result shape every transcription provider maps its upstream's answer onto. */

/** One word with its own timing, as the provider gave it (seconds from the start of the media). */
export interface TranscriptWord {
  start: number;
  end: number;
  /** The word as written in the transcript, with its punctuation where the provider attaches it. */
  text: string;
  speaker?: string | null;
}

export interface TranscriptSegment {
  /** 1-based position in the transcript. */
  index: number;
  start: number;
  end: number;
  text: string;
  speaker: string | null;
  /** Word timings, when the provider gives them. */
  words?: TranscriptWord[] | null;
}

export interface TranscriptResult {
  /** ISO-639-1 code when known. */
  language: string | null;
  durationSeconds: number | null;
  text: string;
  segments: TranscriptSegment[];
}

export interface TranscriptionRequest {
  /** A local audio file the gateway downloaded (through the guarded client) and prepared with ffmpeg. */
  audioPath: string;
  /** The checked public URL of the media, for providers that fetch by URL themselves. */
  mediaUrl: string;
  language: string | null;
  durationSeconds: number;
  signal: AbortSignal;
}

/** One upstream. Adapters never touch the database; they throw ProviderError. */
export interface TranscriptionProvider {
  readonly name: string;
  transcribe(request: TranscriptionRequest): Promise<TranscriptResult>;
}
