import type { TranscriptSegment } from '../../providers/transcription/transcription.types.js';
import { buildCues } from './cue-builder.js';

/*
 * Both formats write the same cues (see cue-builder.ts): whole milliseconds, so they round identically and exactly;
 * sorted, never overlapping, at most two lines of 42 characters, no blank line inside a cue (a blank line ends it),
 * no CR. The JSON transcript keeps the provider's segments; only the subtitles are re-timed.
 */

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

/** SubRip: cues numbered from 1, `HH:MM:SS,mmm --> HH:MM:SS,mmm`, each followed by a blank line; '' when there is nothing to say. SubRip has no speaker markup. */
export function toSrt(segments: readonly TranscriptSegment[]): string {
  return buildCues(segments)
    .map((c, i) => `${i + 1}\n${clock(c.startMs, ',')} --> ${clock(c.endMs, ',')}\n${c.lines.map(noArrows).join('\n')}\n\n`)
    .join('');
}

/** WebVTT text must escape &, < and > (which also rules out `-->` in a cue). */
const escapeVtt = (line: string) => line.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A voice span `<v Name>` opening the cue: the name on one line, escaped so no `>` or `&` ends or garbles the tag. */
const voice = (speaker: string | null) => {
  const name = speaker ? escapeVtt(speaker.replace(/\s+/g, ' ').trim()) : '';
  return name ? `<v ${name}>` : '';
};

/** WebVTT: the `WEBVTT` header, then cues with `HH:MM:SS.mmm`, the speaker as a voice span; just `WEBVTT\n` when there is nothing to say. */
export function toVtt(segments: readonly TranscriptSegment[]): string {
  const body = buildCues(segments)
    .map((c) => `${clock(c.startMs, '.')} --> ${clock(c.endMs, '.')}\n${voice(c.speaker)}${c.lines.map(escapeVtt).join('\n')}\n\n`)
    .join('');
  return body ? `WEBVTT\n\n${body}` : 'WEBVTT\n';
}
