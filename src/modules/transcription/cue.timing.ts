import { breakLines } from './cue.lines.js';
import type { CueRules } from './cue.rules.js';
import type { Token } from './cue.words.js';

// Timing: each group of tokens becomes a cue with its lines, then the cues are retimed together.

/** A cue being timed: its lines are final, its times not yet. */
export interface Draft {
  startMs: number;
  endMs: number;
  lines: string[];
  speaker: string | null;
  chars: number;
  /** How long this cue may last: maxDurationMs, or more when one word alone lasts longer. */
  allowMs: number;
}

/** One group of tokens as a cue: its lines broken, its times those of its words. */
export function draft(tokens: Token[], rules: CueRules): Draft {
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
export function retime(drafts: Draft[], rules: CueRules): void {
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
