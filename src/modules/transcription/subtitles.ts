import type { TranscriptSegment } from '../../providers/transcription/transcription.types.js';

/** One cue in whole milliseconds, so both formats round identically and exactly. */
interface Cue {
  startMs: number;
  endMs: number;
  lines: string[];
}

/** Seconds → integer ms; negatives and non-numbers become 0 (a cue cannot start before the media). */
function ms(seconds: number): number {
  const v = Math.round(seconds * 1000);
  return Number.isFinite(v) && v > 0 ? v : 0;
}

/** Cues with non-empty text, end never before start, and no blank lines (a blank line ends a cue). */
function cues(segments: readonly TranscriptSegment[]): Cue[] {
  const out: Cue[] = [];
  for (const s of segments) {
    const lines = String(s.text ?? '')
      .split(/\r\n|\r|\n|\u2028|\u2029/)
      .map((l) => l.trim())
      .filter(Boolean);
    if (!lines.length) continue;
    const startMs = ms(s.start);
    out.push({ startMs, endMs: Math.max(startMs, ms(s.end)), lines });
  }
  return out;
}

/** HH:MM:SS + separator + mmm; hours grow past two digits rather than wrap. */
function clock(total: number, separator: ',' | '.'): string {
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor(total / 60_000) % 60;
  const s = Math.floor(total / 1000) % 60;
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(h)}:${pad(m)}:${pad(s)}${separator}${pad(total % 1000, 3)}`;
}

/** An arrow inside the text would read as a timing line to lenient parsers. */
const noArrows = (line: string) => line.replace(/-->/g, '->');

/** SubRip: cues numbered from 1, `HH:MM:SS,mmm --> HH:MM:SS,mmm`, each followed by a blank line; '' when there is nothing to say. */
export function toSrt(segments: readonly TranscriptSegment[]): string {
  return cues(segments)
    .map((c, i) => `${i + 1}\n${clock(c.startMs, ',')} --> ${clock(c.endMs, ',')}\n${c.lines.map(noArrows).join('\n')}\n\n`)
    .join('');
}

/** WebVTT text must escape &, < and > (which also rules out `-->` in a cue). */
const escapeVtt = (line: string) => line.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** WebVTT: the `WEBVTT` header, then cues with `HH:MM:SS.mmm`; just `WEBVTT\n` when there is nothing to say. */
export function toVtt(segments: readonly TranscriptSegment[]): string {
  const body = cues(segments)
    .map((c) => `${clock(c.startMs, '.')} --> ${clock(c.endMs, '.')}\n${c.lines.map(escapeVtt).join('\n')}\n\n`)
    .join('');
  return body ? `WEBVTT\n\n${body}` : 'WEBVTT\n';
}
