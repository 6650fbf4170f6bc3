import type { TranscriptSegment } from '../../providers/transcription/transcription.types.js';

// Word alignment: the transcript's segments and words become timed tokens (buildCues, in cue-builder.ts, says the rules).

/** A word (or a piece of one, in a script written without spaces) with whole-millisecond times. */
export interface Token {
  text: string;
  startMs: number;
  endMs: number;
  speaker: string | null;
  /** Joined to the previous token without a space (pieces of a word in a script written without spaces). */
  glue: boolean;
  /** Timed in proportion to its characters inside a segment without word timings. */
  synthetic: boolean;
  /** Starts a new cue whatever the rules say (a new segment without word timings). */
  hardBreak: boolean;
  /** Duration of the provider word this token comes from (0 when synthetic). */
  wordMs: number;
}

/** Seconds → integer ms; negatives and non-numbers become 0 (a cue cannot start before the media). */
function toMs(seconds: unknown): number {
  const v = Math.round(Number(seconds) * 1000);
  return Number.isFinite(v) && v > 0 ? v : 0;
}

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Whitespace that separates words: line breaks (CRLF, U+2028/9), spaces and tabs; no-break spaces keep a word whole. */
const WORD_SEPARATORS = /[\t\n\v\f\r \u0085\u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]+/;
const splitWords = (text: unknown): string[] =>
  String(text ?? '')
    .split(WORD_SEPARATORS)
    .filter(Boolean);

/** Scripts written without spaces between words. */
const NO_SPACE_SCRIPT =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;
const OPENING = /^[\p{Ps}\p{Pi}]+$/u;
let segmenter: Intl.Segmenter | undefined;

/** A whitespace-free word cut into pieces a line or cue may break between (only for scripts written without spaces). */
function pieces(word: string): string[] {
  if (!NO_SPACE_SCRIPT.test(word) || typeof Intl.Segmenter !== 'function') return [word];
  segmenter ??= new Intl.Segmenter(undefined, { granularity: 'word' });
  const out: string[] = [];
  let pending = '';
  for (const { segment, isWordLike } of segmenter.segment(word)) {
    if (isWordLike) {
      out.push(pending + segment);
      pending = '';
    } else if (OPENING.test(segment) || !out.length) {
      pending += segment;
    } else {
      out[out.length - 1] += segment;
    }
  }
  if (pending) {
    if (out.length) out[out.length - 1] += pending;
    else out.push(pending);
  }
  return out.length ? out : [word];
}

const cleanSpeaker = (s: unknown): string | null => (s == null ? null : String(s).replace(/\s+/g, ' ').trim() || null);

/**
 * Spreads `parts` (joined by spaces) over [startMs, endMs] in proportion to their characters; each part owns the
 * space after it, so consecutive parts tile the span.
 */
function spread(parts: string[], startMs: number, endMs: number): { text: string; startMs: number; endMs: number }[] {
  const total = parts.reduce((n, p) => n + p.length, 0) + parts.length - 1;
  const at = (offset: number) => startMs + Math.round(((endMs - startMs) * offset) / Math.max(1, total));
  let offset = 0;
  return parts.map((text, i) => {
    const from = at(offset);
    offset += text.length + 1;
    return { text, startMs: from, endMs: i === parts.length - 1 ? endMs : at(offset) };
  });
}

/** A word as the provider timed it, before scripts without spaces are cut. */
interface TimedWord {
  text: string;
  startMs: number;
  endMs: number;
  speaker: string | null;
}

/** Letters and digits only, case-folded: how a word is recognised in the segment text. */
const bare = (s: string) =>
  s
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]/gu, '');
/** How far ahead in the text a word is looked for (words the text lacks, or text the words lack). */
const ALIGN_WINDOW = 4;

/**
 * The words as the segment text writes them. Providers such as OpenAI give words without punctuation or with other
 * casing while the segment text has both; each word takes the form of the text token it matches (same letters and
 * digits, looked for a few tokens ahead), and punctuation standing alone in the text ("—") joins the word before it.
 * A word the text does not have keeps its own form; text the words do not have is left out (the words are the record).
 */
function punctuate(words: readonly string[], text: readonly string[]): string[] {
  const out = [...words];
  let j = 0;
  let previous = -1;
  const attachPunctuation = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (previous >= 0 && !bare(text[k])) out[previous] += ` ${text[k]}`;
  };
  words.forEach((w, i) => {
    const b = bare(w);
    if (!b) return;
    for (let k = j; k < Math.min(text.length, j + ALIGN_WINDOW); k++) {
      if (bare(text[k]) !== b) continue;
      attachPunctuation(j, k);
      out[i] = text[k];
      previous = i;
      j = k + 1;
      return;
    }
  });
  attachPunctuation(j, text.length);
  return out;
}

/** Words (given or cut from the segment text) in transcript order, each with integer ms times. */
export function tokenize(segments: readonly TranscriptSegment[]): Token[] {
  const tokens: Token[] = [];
  // Consecutive word-timed segments form one run: their words run on into each other (the provider's cut is not a
  // sentence end), and their texts together give the words their punctuation.
  let run: { words: TimedWord[]; text: string[] } | null = null;
  const endRun = () => {
    if (!run) return;
    const texts = punctuate(
      run.words.map((w) => w.text),
      run.text,
    );
    const first = tokens.length;
    run.words.forEach((w, i) => {
      spread(pieces(texts[i]), w.startMs, w.endMs).forEach((p, k) => {
        tokens.push({ ...p, speaker: w.speaker, glue: k > 0, synthetic: false, hardBreak: false, wordMs: w.endMs - w.startMs });
      });
    });
    tokens[first].hardBreak = true;
    run = null;
  };
  for (const s of segments) {
    if (!s) continue;
    const segStart = toMs(s.start);
    const segEnd = Math.max(segStart, toMs(s.end));
    const speaker = cleanSpeaker(s.speaker);
    const words: TimedWord[] = [];
    let cursor = segStart;
    for (const w of Array.isArray(s.words) ? s.words : []) {
      if (!w) continue;
      const parts = splitWords(w.text);
      if (!parts.length) continue;
      // A word without a usable time sits where the previous one ended.
      const start = finite(w.start) ? toMs(w.start) : cursor;
      const end = Math.max(start, finite(w.end) ? toMs(w.end) : start);
      cursor = end;
      const wordSpeaker = cleanSpeaker(w.speaker) ?? speaker;
      // A "word" with spaces inside is several words sharing its time.
      for (const part of spread(parts, start, end)) words.push({ ...part, speaker: wordSpeaker });
    }
    if (words.length) {
      run ??= { words: [], text: [] };
      run.words.push(...words);
      run.text.push(...splitWords(s.text));
      continue;
    }
    endRun();
    const parts = splitWords(s.text);
    if (!parts.length) continue;
    // Without word timings the text is timed in proportion to its characters within the segment.
    const first = tokens.length;
    for (const part of spread(parts, segStart, segEnd)) {
      spread(pieces(part.text), part.startMs, part.endMs).forEach((p, k) => {
        tokens.push({ ...p, speaker, glue: k > 0, synthetic: true, hardBreak: false, wordMs: 0 });
      });
    }
    tokens[first].hardBreak = true;
  }
  endRun();
  return tokens;
}
