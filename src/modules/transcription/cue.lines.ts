import type { Token } from './cue.words.js';

// Line breaking, and how a cue's tokens read: their length on a line, sentence and clause ends, weak words.

/** How many characters of imbalance a line break after punctuation is worth (and a break after a weak word costs). */
const SENTENCE_BREAK_BONUS = 8;
const CLAUSE_BREAK_BONUS = 5;
const WEAK_BREAK_PENALTY = 9;

const TRAILING_CLOSERS = `["'”’»)\\]」』】〉》〕]*$`;
const SENTENCE_END = new RegExp(`[.?!…。！？‽⁇⁈⁉]${TRAILING_CLOSERS}`, 'u');
const CLAUSE_END = new RegExp(`[,;:—–、，；：]${TRAILING_CLOSERS}`, 'u');
const DASH = /^[-–—]+$/;
/** Abbreviations whose full stop does not end a sentence. */
const ABBREVIATIONS = new Set(['mr.', 'mrs.', 'ms.', 'dr.', 'prof.', 'st.', 'sr.', 'jr.', 'vs.', 'etc.', 'e.g.', 'i.e.', 'no.', 'approx.']);
/** Words a line or cue should not end on: they belong with what follows. */
const WEAK_WORDS = new Set(
  'a an the to of in on at by for with from into onto about as and or but nor so if than my your his her its our their this these those'.split(
    ' ',
  ),
);

export const endsSentence = (t: Token) => SENTENCE_END.test(t.text) && !ABBREVIATIONS.has(t.text.toLowerCase());
export const endsClause = (t: Token) => CLAUSE_END.test(t.text) || DASH.test(t.text);
export const isWeak = (t: Token) => WEAK_WORDS.has(t.text.toLowerCase());

/** Characters of tokens[from, to) written on one line. */
export function chars(tokens: readonly Token[], from = 0, to = tokens.length): number {
  let n = 0;
  for (let i = from; i < to; i++) n += tokens[i].text.length + (i > from && !tokens[i].glue ? 1 : 0);
  return n;
}

export function joinLine(tokens: readonly Token[]): string {
  return tokens.map((t, i) => (i > 0 && !t.glue ? ' ' : '') + t.text).join('');
}

export function duration(tokens: readonly Token[]): number {
  let end = tokens[0].endMs;
  for (const t of tokens) end = Math.max(end, t.endMs);
  return end - tokens[0].startMs;
}

/** The fewest lines the tokens fill (greedy filling is optimal); a token longer than a line gets a line to itself. */
export function countLines(tokens: readonly Token[], width: number): number {
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
export function breakLines(tokens: readonly Token[], width: number): string[] {
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
