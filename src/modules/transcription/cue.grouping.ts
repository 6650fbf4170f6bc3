import { chars, countLines, duration, endsClause, endsSentence, isWeak } from './cue.lines.js';
import type { CueRules } from './cue.rules.js';
import type { Token } from './cue.words.js';

// Grouping: which tokens share a cue (buildCues, in cue-builder.ts, lists the rules).

/** A silence longer than this between two words ends a cue. */
const PAUSE_MS = 1500;
/** A cue that reaches a sentence end closes there once it holds more than a third of its capacity or lasts this long. */
const SENTENCE_FULL_MS = 1500;
/** Characters of distance from a balanced cue break that a clause end is worth. */
const CLAUSE_CUE_BREAK_BONUS = 12;
/** Characters of distance from the ideal cue break that ending a cue on an article/preposition/conjunction costs. */
const WEAK_CUE_BREAK_PENALTY = 6;

/** Whether a cue must end between tokens a and b: a new segment without words, a new speaker, a long pause, a step back in time. */
const forcedBreak = (a: Token, b: Token) =>
  b.hardBreak || b.speaker !== a.speaker || b.startMs - a.endMs > PAUSE_MS || b.startMs < a.startMs;

/** Groups the tokens into cues greedily (the rules are listed on buildCues). */
export function group(tokens: readonly Token[], rules: CueRules): Token[][] {
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
      const cost = Math.abs(chars(cur, 0, k) - target) - (endsClause(last) ? clauseBonus : 0) + (isWeak(last) ? WEAK_CUE_BREAK_PENALTY : 0);
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
