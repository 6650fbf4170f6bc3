import type { z } from 'zod';
import type { transcriptSegmentSchema, transcriptWordSchema } from '../../types/contract/transcription.js';

/** The result shape every transcription provider maps its upstream's answer onto. */

/** One word with its own timing, as the provider gave it (seconds from the start of the media). */
export type TranscriptWord = z.infer<typeof transcriptWordSchema>;
/** A segment: 1-based `index`, seconds from the start, the speaker when told apart, word timings when given. */
export type TranscriptSegment = z.infer<typeof transcriptSegmentSchema>;

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
  /** Pauses in the prepared audio (seconds), where long audio can be cut without cutting a word. */
  silences?: readonly { start: number; end: number }[];
  /** Reports how much of the work is done, 0..1 (e.g. per piece of long audio). */
  progress?: (fraction: number) => void;
}

/** One upstream. Adapters never touch the database; they throw ProviderError. */
export interface TranscriptionProvider {
  readonly name: string;
  transcribe(request: TranscriptionRequest): Promise<TranscriptResult>;
}
