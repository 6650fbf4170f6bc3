import type { TranscriptResult, TranscriptSegment, TranscriptWord } from './transcription.types.js';
import { roundMs } from './times.js';

/** A stretch of the audio to transcribe alone, and where its own part of the time line begins and ends. */
export interface PiecePlan {
  /** What is cut out of the file (seconds), overlap included. */
  start: number;
  end: number;
  /** The part this piece speaks for: seams at pauses, or in the middle of the overlap. */
  keepFrom: number;
  keepTo: number;
}

/** Where one piece ends: in the middle of a pause, or (`quiet` false) at a hard cut with overlap. */
export interface Seam {
  at: number;
  quiet: boolean;
}

/**
 * The seam after `last`: near `last + pieceSeconds`, in the middle of the pause closest to that
 * point within a tenth of a piece either way; where there is no pause, at the point itself. Null
 * when what is left is short enough to be the last piece. Only pauses ending before
 * `last + pieceSeconds * 1.1` matter, so audio still being written can be cut once it got there.
 */
export function nextSeam(
  last: number,
  durationSeconds: number,
  silences: readonly { start: number; end: number }[],
  pieceSeconds: number,
): Seam | null {
  const target = last + pieceSeconds;
  if (target >= durationSeconds - pieceSeconds / 4) return null;
  const window = pieceSeconds / 10;
  const pause = silences
    .map((s) => (s.start + s.end) / 2)
    .filter((mid) => mid > last + pieceSeconds / 2 && Math.abs(mid - target) <= window)
    .sort((a, b) => Math.abs(a - target) - Math.abs(b - target))[0];
  return pause === undefined ? { at: target, quiet: false } : { at: pause, quiet: true };
}

/** The piece between two seams: where it is cut (overlap at a hard cut) and the part it speaks for. */
export function pieceBetween(from: Seam, to: Seam, durationSeconds: number, overlap = 1): PiecePlan {
  const lead = from.quiet ? 0 : overlap;
  const tail = to.quiet ? 0 : overlap;
  return { start: Math.max(0, from.at - lead), end: Math.min(durationSeconds, to.at + tail), keepFrom: from.at, keepTo: to.at };
}

/**
 * Where to cut long audio: near every `pieceSeconds`, in the middle of the pause closest to that
 * point; where there is no pause, at the point itself with `overlap` seconds on both sides, so that
 * a word cut in two is heard whole by one piece.
 */
export function planPieces(
  durationSeconds: number,
  silences: readonly { start: number; end: number }[],
  pieceSeconds: number,
  overlap = 1,
): PiecePlan[] {
  const seams: Seam[] = [{ at: 0, quiet: true }];
  for (
    let seam = nextSeam(0, durationSeconds, silences, pieceSeconds);
    seam;
    seam = nextSeam(seam.at, durationSeconds, silences, pieceSeconds)
  )
    seams.push(seam);
  seams.push({ at: durationSeconds, quiet: true });
  return seams.slice(1).map((to, i) => pieceBetween(seams[i], to, durationSeconds, overlap));
}

/** Keeps what lies (by its middle) within [from, to), on the global time line. */
const within = (start: number, end: number, from: number, to: number, last: boolean) => {
  const mid = (start + end) / 2;
  return mid >= from && (mid < to || last);
};

/**
 * The pieces' transcripts as one: each piece's times shifted to where it was cut, clamped to the
 * piece, and only the part each piece speaks for kept, so nothing said in an overlap is written twice.
 */
export function stitchPieces(
  results: readonly TranscriptResult[],
  plans: readonly PiecePlan[],
  fallbackLanguage: string | null,
): TranscriptResult {
  const segments: TranscriptSegment[] = [];
  // Where the joined time line has got to: a piece's first words never start before the last kept ones end.
  let floor = 0;
  results.forEach((r, i) => {
    const plan = plans[i];
    const length = plan.end - plan.start;
    const last = i === results.length - 1;
    const shift = (t: number) => roundMs(plan.start + Math.min(Math.max(t, 0), length));
    for (const s of r.segments) {
      const rawStart = shift(s.start);
      const rawEnd = Math.max(rawStart, shift(s.end));
      if (!within(rawStart, rawEnd, plan.keepFrom, plan.keepTo, last)) continue;
      const start = Math.max(rawStart, floor);
      const end = Math.max(rawEnd, start);
      let words: TranscriptWord[] | null | undefined = s.words;
      if (words?.length) {
        words = words
          .map((w) => ({ ...w, start: shift(w.start), end: Math.max(shift(w.start), shift(w.end)) }))
          .filter((w) => within(w.start, w.end, plan.keepFrom, plan.keepTo, last))
          .map((w) => ({ ...w, start: Math.min(Math.max(w.start, start), end), end: Math.min(Math.max(w.end, start), end) }));
      }
      segments.push({ ...s, index: segments.length + 1, start, end, ...(words ? { words } : {}) });
      floor = end;
    }
  });
  const total = plans.at(-1)?.end ?? 0;
  return {
    language: results.find((r) => r.language)?.language ?? fallbackLanguage,
    durationSeconds: roundMs(total),
    text: segments
      .map((s) => s.text)
      .filter(Boolean)
      .join(' '),
    segments,
  };
}
