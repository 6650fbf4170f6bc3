import type { TranscriptSegment } from '../../providers/transcription/transcription.types.js';

interface Cue {
  start: number;
  end: number;
  text: string;
}

/** Cues in whole milliseconds: non-negative, end never before start, no empty text, no blank lines inside a cue. */
function cues(segments: readonly TranscriptSegment[]): Cue[] {
  const out: Cue[] = [];
  for (const s of segments) {
    // A blank line ends a cue in both formats, so collapse them.
    const text = s.text.replace(/\r\n?/g, '\n').split('\n').map((l) => l.trim()).filter(Boolean).join('\n');
    if (!text) continue;
    const start = Math.max(0, Math.round(s.start * 1000));
    const end = Math.max(start, Math.round(s.end * 1000));
    out.push({ start, end, text });
  }
  return out;
}

function clock(ms: number, separator: ',' | '.'): string {
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(h)}:${pad(m)}:${pad(s)}${separator}${pad(ms % 1000, 3)}`;
}

/** SubRip: numbered cues from 1, `HH:MM:SS,mmm --> HH:MM:SS,mmm`, one blank line after each. */
export function toSrt(segments: readonly TranscriptSegment[]): string {
  return cues(segments)
    .map((c, i) => `${i + 1}\n${clock(c.start, ',')} --> ${clock(c.end, ',')}\n${c.text.replace(/-->/g, '->')}\n\n`)
    .join('');
}

/** WebVTT: the header, then cues with `HH:MM:SS.mmm`; text escaped as the format requires. */
export function toVtt(segments: readonly TranscriptSegment[]): string {
  const escape = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const body = cues(segments)
    .map((c) => `${clock(c.start, '.')} --> ${clock(c.end, '.')}\n${escape(c.text)}\n\n`)
    .join('');
  return `WEBVTT\n\n${body}`;
}
