import type { TranscriptSegment } from '../../providers/transcription/transcription.types.js';

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

/** A silence longer than this between two words ends a cue. */
const PAUSE_MS = 1500;
/** A cue that reaches a sentence end closes there once it holds more than a third of its capacity or lasts this long. */
const SENTENCE_FULL_MS = 1500;
/** How many characters of imbalance a line break after punctuation is worth (and a break after a weak word costs). */
const SENTENCE_BREAK_BONUS = 8;
const CLAUSE_BREAK_BONUS = 5;
const WEAK_BREAK_PENALTY = 9;
/** Characters of distance from a balanced cue break that a clause end is worth. */
const CLAUSE_CUE_BREAK_BONUS = 12;
/** Characters of distance from the ideal cue break that ending a cue on an article/preposition/conjunction costs. */
const WEAK_CUE_BREAK_PENALTY = 6;

interface Token {
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

interface Draft {
  startMs: number;
  endMs: number;
  lines: string[];
  speaker: string | null;
  chars: number;
  /** How long this cue may last: maxDurationMs, or more when one word alone lasts longer. */
  allowMs: number;
}

/** Seconds → integer ms; negatives and non-numbers become 0 (a cue cannot start before the media). */
function toMs(seconds: unknown): number {
  const v = Math.round(Number(seconds) * 1000);
  return Number.isFinite(v) && v > 0 ? v : 0;
}

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Whitespace that separates words: line breaks (CRLF, U+2028/9), spaces and tabs; no-break spaces keep a word whole. */
const WORD_SEPARATORS = /[\t\n\v\f\r \u0085\u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]+/;
const splitWords = (text: unknown): string[] => String(text ?? '').split(WORD_SEPARATORS).filter(Boolean);

/** Scripts written without spaces between words. */
const NO_SPACE_SCRIPT = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;
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
const bare = (s: string) => s.normalize('NFKC').toLowerCase().replace(/[^\p{L}\p{N}]/gu, '');
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
function tokenize(segments: readonly TranscriptSegment[]): Token[] {
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

const TRAILING_CLOSERS = `["'”’»)\\]」』】〉》〕]*$`;
const SENTENCE_END = new RegExp(`[.?!…。！？‽⁇⁈⁉]${TRAILING_CLOSERS}`, 'u');
const CLAUSE_END = new RegExp(`[,;:—–、，；：]${TRAILING_CLOSERS}`, 'u');
const DASH = /^[-–—]+$/;
/** Abbreviations whose full stop does not end a sentence. */
const ABBREVIATIONS = new Set(['mr.', 'mrs.', 'ms.', 'dr.', 'prof.', 'st.', 'sr.', 'jr.', 'vs.', 'etc.', 'e.g.', 'i.e.', 'no.', 'approx.']);
/** Words a line or cue should not end on: they belong with what follows. */
const WEAK_WORDS = new Set(
  'a an the to of in on at by for with from into onto about as and or but nor so if than my your his her its our their this these those'.split(' '),
);

const endsSentence = (t: Token) => SENTENCE_END.test(t.text) && !ABBREVIATIONS.has(t.text.toLowerCase());
const endsClause = (t: Token) => CLAUSE_END.test(t.text) || DASH.test(t.text);
const isWeak = (t: Token) => WEAK_WORDS.has(t.text.toLowerCase());

/** Characters of tokens[from, to) written on one line. */
function chars(tokens: readonly Token[], from = 0, to = tokens.length): number {
  let n = 0;
  for (let i = from; i < to; i++) n += tokens[i].text.length + (i > from && !tokens[i].glue ? 1 : 0);
  return n;
}

function joinLine(tokens: readonly Token[]): string {
  return tokens.map((t, i) => (i > 0 && !t.glue ? ' ' : '') + t.text).join('');
}

function duration(tokens: readonly Token[]): number {
  let end = tokens[0].endMs;
  for (const t of tokens) end = Math.max(end, t.endMs);
  return end - tokens[0].startMs;
}

/** The fewest lines the tokens fill (greedy filling is optimal); a token longer than a line gets a line to itself. */
function countLines(tokens: readonly Token[], width: number): number {
  let lines = 0;
  let len = 0;
  for (const t of tokens) {
    const add = (t.glue ? 0 : 1) + t.text.length;
    if (lines && len + add <= width) {
      len += add;
    } else {
      lines++;
      len = t.text.length;
    }
  }
  return lines;
}

/**
 * Lines by balance: one line when the text fits it; otherwise the fewest lines, each within the width (a longer
 * token alone), chosen to minimise each line's distance from an even share, with a bonus for a break after a
 * sentence end or clause punctuation (so it wins when within a few characters of balanced), a penalty for a break
 * after an article/preposition/conjunction, and, all else equal, the upper line shorter (bottom-heavy).
 */
function breakLines(tokens: readonly Token[], width: number): string[] {
  if (chars(tokens) <= width) return [joinLine(tokens)];
  const n = tokens.length;
  const lines = countLines(tokens, width);
  if (lines <= 1) return [joinLine(tokens)];
  const target = (chars(tokens) - (lines - 1)) / lines;
  const breakScore = (i: number) => {
    // Break after tokens[i - 1]; a break between glued pieces costs nothing extra.
    const t = tokens[i - 1];
    if (endsSentence(t)) return -SENTENCE_BREAK_BONUS;
    if (endsClause(t)) return -CLAUSE_BREAK_BONUS;
    return isWeak(t) ? WEAK_BREAK_PENALTY : 0;
  };
  // best[j][i]: cheapest way to write tokens[0, i) on j lines; from[j][i]: where the j-th line starts.
  const best = Array.from({ length: lines + 1 }, () => new Array<number>(n + 1).fill(Infinity));
  const from = Array.from({ length: lines + 1 }, () => new Array<number>(n + 1).fill(-1));
  best[0][0] = 0;
  for (let j = 1; j <= lines; j++) {
    for (let i = 1; i <= n; i++) {
      for (let k = i - 1; k >= 0; k--) {
        const len = chars(tokens, k, i);
        if (len > width && i - k > 1) break;
        if (best[j - 1][k] === Infinity) continue;
        const cost = best[j - 1][k] + Math.abs(len - target) + (i < n ? breakScore(i) : 0) + 0.001 * len * (lines - j);
        if (cost < best[j][i]) {
          best[j][i] = cost;
          from[j][i] = k;
        }
      }
    }
  }
  if (best[lines][n] === Infinity) return [joinLine(tokens)];
  const out: string[] = [];
  for (let j = lines, i = n; j > 0; i = from[j][i], j--) out.unshift(joinLine(tokens.slice(from[j][i], i)));
  return out;
}

/** Whether a cue must end between tokens a and b: a new segment without words, a new speaker, a long pause, a step back in time. */
const forcedBreak = (a: Token, b: Token) =>
  b.hardBreak || b.speaker !== a.speaker || b.startMs - a.endMs > PAUSE_MS || b.startMs < a.startMs;

/** Groups the tokens into cues greedily (the rules are listed on buildCues). */
function group(tokens: readonly Token[], rules: CueRules): Token[][] {
  const capacity = rules.maxLines * rules.maxLineChars;
  const out: Token[][] = [];
  // The open cue is always tokens[first, i).
  let cur: Token[] = [];
  let first = 0;
  const flush = (k: number) => {
    out.push(cur.slice(0, k));
    cur = cur.slice(k);
    first += k;
  };
  const fits = (ts: Token[]) =>
    countLines(ts, rules.maxLineChars) <= rules.maxLines &&
    // Times spread over a segment without words are a guess: a sparse segment is not cut into scraps by its duration.
    (duration(ts) <= rules.maxDurationMs || (ts[ts.length - 1].synthetic && chars(ts, 0, ts.length - 1) < capacity / 3));
  const fullEnough = (ts: Token[]) => chars(ts) > capacity / 3 || duration(ts) > SENTENCE_FULL_MS;
  /**
   * Whether everything from tokens[i] up to the next forced break would still fit into the open cue, and it either
   * ends a sentence too, or makes the cue the whole run (a short segment stays one cue), or is the rest of a segment
   * without words (whose end is the provider's cut: better a sentence's first words at the end of a cue than a
   * flash of them alone). With word timings a sentence start is otherwise not left hanging before a pause.
   */
  const restFits = (i: number): boolean => {
    const candidate = [...cur];
    const wholeRun = first === 0 || forcedBreak(tokens[first - 1], tokens[first]);
    for (let j = i; j < tokens.length; j++) {
      if (forcedBreak(candidate[candidate.length - 1], tokens[j])) break;
      candidate.push(tokens[j]);
      if (!fits(candidate)) return false;
    }
    const last = candidate[candidate.length - 1];
    return wholeRun || last.synthetic || endsSentence(last);
  };
  /** Characters from tokens[i] to the end of its sentence, or Infinity when that is further than a cue holds. */
  const sentenceRest = (i: number): number => {
    for (let j = i; j < tokens.length; j++) {
      if (j > i && forcedBreak(tokens[j - 1], tokens[j])) return chars(tokens, i, j);
      if (endsSentence(tokens[j])) return chars(tokens, i, j + 1);
      if (j - i > capacity) break;
    }
    return tokens.length - i <= capacity ? chars(tokens, i) : Infinity;
  };
  /**
   * Where to end the cue when tokens[i] does not fit: after the last sentence end that leaves a cue worth reading;
   * else as late as possible (or, when only a scrap of the sentence would be left for the next cue, near the middle
   * of what is left), preferring a clause end over mid-clause and not ending on an article or preposition.
   */
  const breakAt = (i: number): number => {
    const n = cur.length;
    const total = chars(cur);
    for (let k = n; k >= 1; k--) if (endsSentence(cur[k - 1]) && chars(cur, 0, k) >= Math.min(capacity / 6, total / 3)) return k;
    const rest = sentenceRest(i);
    // A clause end is worth half the cue when breaking as late as possible, a few characters when balancing.
    const [target, clauseBonus] = rest < capacity / 3 ? [(total + 1 + rest) / 2, CLAUSE_CUE_BREAK_BONUS] : [total, total / 2];
    let best = n;
    let bestCost = Infinity;
    for (let k = n; k >= 1; k--) {
      const last = cur[k - 1];
      const cost =
        Math.abs(chars(cur, 0, k) - target) - (endsClause(last) ? clauseBonus : 0) + (isWeak(last) ? WEAK_CUE_BREAK_PENALTY : 0);
      if (cost < bestCost) {
        best = k;
        bestCost = cost;
      }
    }
    return best;
  };
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    for (;;) {
      if (!cur.length) {
        cur.push(t);
        break;
      }
      const last = cur[cur.length - 1];
      if (forcedBreak(last, t)) {
        flush(cur.length);
        continue;
      }
      // A sentence end closes a cue that is full enough, unless all that is left before the next forced break fits too.
      if (endsSentence(last) && fullEnough(cur) && !restFits(i)) {
        flush(cur.length);
        continue;
      }
      if (fits([...cur, t])) {
        cur.push(t);
        break;
      }
      flush(breakAt(i));
    }
  }
  if (cur.length) flush(cur.length);
  return out;
}

function draft(tokens: Token[], rules: CueRules): Draft {
  const lines = breakLines(tokens, rules.maxLineChars);
  return {
    startMs: Math.min(...tokens.map((t) => t.startMs)),
    endMs: Math.max(...tokens.map((t) => t.endMs)),
    lines,
    speaker: tokens[0].speaker,
    chars: lines.reduce((n, l) => n + l.length, 0),
    allowMs: Math.max(rules.maxDurationMs, ...tokens.map((t) => t.wordMs)),
  };
}

/**
 * Timing: sorted by start (stable), no overlap (a start is clamped to the previous end; with a gap, the previous
 * cue is shortened to make room when it can be), never longer than allowed, then each cue is extended into the
 * silence after it (never past the next cue, never beyond maxDurationMs) to reach minDurationMs and the reading
 * speed. Other cues are not moved by the extension.
 */
function retime(drafts: Draft[], rules: CueRules): void {
  drafts.sort((a, b) => a.startMs - b.startMs);
  const gap = Math.max(0, rules.minGapMs);
  drafts.forEach((c, i) => {
    const prev = drafts[i - 1];
    if (prev) {
      c.startMs = Math.max(c.startMs, prev.endMs);
      if (c.startMs - prev.endMs < gap) {
        if (c.startMs - gap >= prev.startMs) prev.endMs = c.startMs - gap;
        else c.startMs = prev.endMs + gap;
      }
    }
    c.endMs = Math.min(Math.max(c.endMs, c.startMs), c.startMs + c.allowMs);
  });
  drafts.forEach((c, i) => {
    const next = drafts[i + 1];
    const limit = Math.min(next ? next.startMs - gap : Infinity, c.startMs + rules.maxDurationMs);
    const wanted = c.startMs + Math.max(rules.minDurationMs, Math.ceil((c.chars * 1000) / rules.maxCharsPerSecond));
    c.endMs = Math.max(c.endMs, Math.min(wanted, limit));
  });
}

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
