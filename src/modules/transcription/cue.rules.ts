/**
 * Subtitle cues built by the streaming services' style rules (Netflix-style timed text guidelines):
 * at most two balanced lines of 42 characters, 5/6 s (20 frames) to 7 s on screen, at most 20 characters
 * per second, breaks at sentence ends and clauses, never across a speaker change, never overlapping.
 *
 * Only SRT/WebVTT are re-timed this way; the JSON transcript keeps the provider's segments.
 *
 * Lengths are counted in UTF-16 code units (what `String.length` says), spaces included, line breaks not.
 * Scripts written without spaces (Han, kana, Thai, Lao, Khmer, Myanmar) are cut into words with
 * `Intl.Segmenter` so they can be broken into lines and cues like spaced text; their punctuation stays with
 * the word before it (an opening bracket with the word after it). A token that still exceeds the line width
 * (a long URL, a long compound) is never split: it stands alone on its own line. The 20 cps limit is applied
 * to those scripts as to any other (their own guidelines are slower; callers can pass other rules).
 */
export interface CueRules {
  /** Characters per line (42). */
  maxLineChars: number;
  /** Lines per cue (2). */
  maxLines: number;
  /** Longest time on screen (7000), unless a single word itself lasts longer. */
  maxDurationMs: number;
  /** Shortest time on screen (833, about 20 frames), when the silence after the cue allows it. */
  minDurationMs: number;
  /** Reading speed (20), reached by extending a cue into the silence after it where there is some. */
  maxCharsPerSecond: number;
  /** Gap between consecutive cues (0: cues may touch but never overlap). */
  minGapMs: number;
}

export const DEFAULT_CUE_RULES: CueRules = Object.freeze({
  maxLineChars: 42,
  maxLines: 2,
  maxDurationMs: 7000,
  minDurationMs: 833,
  maxCharsPerSecond: 20,
  minGapMs: 0,
});

export interface Cue {
  startMs: number;
  endMs: number;
  /** 1..maxLines non-empty lines without line breaks. */
  lines: string[];
  speaker: string | null;
}
