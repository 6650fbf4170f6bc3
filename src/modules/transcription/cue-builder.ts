import type { TranscriptSegment } from '../../providers/transcription/transcription.types.js';
import { group } from './cue.grouping.js';
import { DEFAULT_CUE_RULES, type Cue, type CueRules } from './cue.rules.js';
import { draft, retime } from './cue.timing.js';
import { tokenize } from './cue.words.js';

export { DEFAULT_CUE_RULES, type Cue, type CueRules } from './cue.rules.js';

/**
 * Subtitle cues for the transcript. Empty text makes no cue; line breaks, CRLF and blank lines in the text are spaces.
 *
 * Words: a segment's `words` (trimmed; speaker = word.speaker ?? segment.speaker) when it has any, its text otherwise.
 * Word-timed segments run on into each other (the provider's cut is not a sentence end), and each word is written as
 * the segment text writes it when the text has it (OpenAI's words carry no punctuation; see punctuate). The text of a
 * segment without words is timed in proportion to its characters within [start, end] and never shares a cue with
 * another segment. Times are whole ms; negative or non-finite → 0; a word without a time follows the previous one.
 *
 * Grouping, greedy, word by word. A cue ends before a word when:
 * - the speaker changes, the word comes after a pause of more than 1.5 s, or it steps back in time (always);
 * - the cue ends a sentence (. ? ! … 。！？) and already holds more than a third of its capacity or lasts more
 *   than 1.5 s, unless everything left up to the next forced break fits too and ends a sentence (or is the rest of
 *   the segment, or makes the cue the whole run);
 * - the word would not fit: more than maxLines lines of maxLineChars, or more than maxDurationMs (a segment without
 *   words, so sparse that its cue holds under a third of the capacity, is not cut by duration: its cue is capped).
 *   The cue then ends after its last sentence end (if that leaves at least a sixth of the capacity), else as late as
 *   possible preferring a clause end (, ; : —) within half the cue, or, when only a scrap of the sentence would be
 *   left over, near the middle of what is left; not after an article, preposition or conjunction.
 * Cue times: first word start .. last word end.
 *
 * Lines: one when the text fits; otherwise the fewest lines, balanced (two lines: the smallest length difference,
 * a break after a sentence end or clause punctuation winning when within 8 or 5 characters of that, none after
 * "the", "of", "and"…, the upper line shorter on a tie), broken at word boundaries only.
 *
 * Timing, in this order: sorted by start (stable); a start is clamped to the previous cue's end (with minGapMs, the
 * previous cue is shortened to leave the gap when it can be); end ≥ start; at most maxDurationMs unless one word
 * alone lasts longer. Then each cue's end is extended into the silence after it, up to the next cue's start (less
 * the gap) and at most to maxDurationMs, to reach minDurationMs and maxCharsPerSecond; other cues do not move.
 * So a cue is shorter than minDurationMs, or faster than maxCharsPerSecond, only when the next cue starts too soon.
 * Degenerate input (a cue swallowed by the one before it, with another right after) can leave a cue of 0 ms.
 */
export function buildCues(segments: readonly TranscriptSegment[], rules: CueRules = DEFAULT_CUE_RULES): Cue[] {
  const r: CueRules = {
    maxLineChars: Math.max(1, Math.floor(rules.maxLineChars) || 1),
    maxLines: Math.max(1, Math.floor(rules.maxLines) || 1),
    maxDurationMs: Math.max(1, rules.maxDurationMs || 1),
    minDurationMs: Math.max(0, rules.minDurationMs || 0),
    maxCharsPerSecond: rules.maxCharsPerSecond > 0 ? rules.maxCharsPerSecond : Infinity,
    minGapMs: Math.max(0, rules.minGapMs || 0),
  };
  const drafts = group(tokenize(segments ?? []), r).map((ts) => draft(ts, r));
  retime(drafts, r);
  return drafts.map(({ startMs, endMs, lines, speaker }) => ({ startMs, endMs, lines, speaker }));
}
