import SrtParser from 'srt-parser-2';
import { toSrt, toVtt } from '../../../src/modules/transcription/subtitles.js';
import type { TranscriptSegment } from '../../../src/providers/transcription/transcription.types.js';

const seg = (start: number, end: number, text: string, index = 1): TranscriptSegment => ({ index, start, end, text, speaker: null });

interface StrictCue {
  n: number;
  startMs: number;
  endMs: number;
  text: string;
}

const toMs = (h: string, m: string, s: string, f: string) => ((Number(h) * 60 + Number(m)) * 60 + Number(s)) * 1000 + Number(f);

/** A strict reader: the whole file must be blocks of number, exact timing line, non-blank text lines, one blank line. */
function readSrtStrict(srt: string): StrictCue[] {
  const block = /(\d+)\n(\d{2,}):([0-5]\d):([0-5]\d),(\d{3}) --> (\d{2,}):([0-5]\d):([0-5]\d),(\d{3})\n((?:[^\n]*\S[^\n]*\n)+)\n/y;
  const cues: StrictCue[] = [];
  let m: RegExpExecArray | null;
  while (block.lastIndex < srt.length && (m = block.exec(srt))) {
    cues.push({ n: Number(m[1]), startMs: toMs(m[2], m[3], m[4], m[5]), endMs: toMs(m[6], m[7], m[8], m[9]), text: m[10].slice(0, -1) });
  }
  if (block.lastIndex !== srt.length) throw new Error(`not strict SRT at offset ${block.lastIndex}: ${JSON.stringify(srt.slice(block.lastIndex, block.lastIndex + 40))}`);
  cues.forEach((c, i) => {
    if (c.n !== i + 1) throw new Error(`cue ${i} is numbered ${c.n}`);
  });
  return cues;
}

/** A strict WebVTT reader for what toVtt writes: header, blank line, then timing + text blocks. */
function readVttStrict(vtt: string): { startMs: number; endMs: number; text: string }[] {
  if (!vtt.startsWith('WEBVTT\n\n')) throw new Error('missing WEBVTT header');
  const block = /(\d{2,}):([0-5]\d):([0-5]\d)\.(\d{3}) --> (\d{2,}):([0-5]\d):([0-5]\d)\.(\d{3})\n((?:[^\n]*\S[^\n]*\n)+)\n/y;
  block.lastIndex = 'WEBVTT\n\n'.length;
  const cues = [];
  let m: RegExpExecArray | null;
  while (block.lastIndex < vtt.length && (m = block.exec(vtt))) {
    cues.push({ startMs: toMs(m[1], m[2], m[3], m[4]), endMs: toMs(m[5], m[6], m[7], m[8]), text: m[9].slice(0, -1) });
  }
  if (block.lastIndex !== vtt.length) throw new Error(`not strict WebVTT at offset ${block.lastIndex}`);
  return cues;
}

const segments: TranscriptSegment[] = [
  seg(0, 2.48, 'Welcome to the show.', 1),
  seg(2.48, 5.123, 'Today we talk about sound.', 2),
  seg(5.123, 7.5, 'Thanks for listening.', 3),
  seg(61.001, 3599.999, 'A long one.', 4),
  seg(3725.5, 3726.042, 'Past the first hour.', 5),
];

describe('toSrt', () => {
  it('writes numbered cues that srt-parser-2 and a strict reader both read back to the millisecond', () => {
    const srt = toSrt(segments);
    expect(srt).not.toContain('\r');
    const strict = readSrtStrict(srt);
    expect(strict.map((c) => c.n)).toEqual([1, 2, 3, 4, 5]);
    const parsed = new SrtParser().fromSrt(srt);
    expect(parsed).toHaveLength(segments.length);
    segments.forEach((s, i) => {
      expect(strict[i]).toEqual({ n: i + 1, startMs: Math.round(s.start * 1000), endMs: Math.round(s.end * 1000), text: s.text });
      expect(parsed[i].id).toBe(String(i + 1));
      expect(Math.round(parsed[i].startSeconds * 1000)).toBe(Math.round(s.start * 1000));
      expect(Math.round(parsed[i].endSeconds * 1000)).toBe(Math.round(s.end * 1000));
      expect(parsed[i].text).toBe(s.text);
    });
  });

  it('writes the exact block format, including hours above zero', () => {
    expect(toSrt([seg(3725.5, 3726.042, 'Past the first hour.')])).toBe('1\n01:02:05,500 --> 01:02:06,042\nPast the first hour.\n\n');
    expect(toSrt([seg(0, 1, 'a'), seg(1, 2, 'b')])).toBe('1\n00:00:00,000 --> 00:00:01,000\na\n\n2\n00:00:01,000 --> 00:00:02,000\nb\n\n');
    expect(toSrt([seg(360_000, 360_001, 'x')])).toBe('1\n100:00:00,000 --> 100:00:01,000\nx\n\n');
  });

  it('rounds half a millisecond up and keeps float noise from shifting a cue', () => {
    expect(toSrt([seg(0.0005, 0.0015, 'x')])).toContain('00:00:00,001 --> 00:00:00,002');
    expect(toSrt([seg(0.0004, 59.9996, 'x')])).toContain('00:00:00,000 --> 00:01:00,000');
    // 0.1 + 0.2 is 0.30000000000000004 in binary floating point.
    expect(toSrt([seg(0.1 + 0.2, 1.1 + 2.2, 'x')])).toContain('00:00:00,300 --> 00:00:03,300');
  });

  it('skips empty cues and still numbers consecutively', () => {
    const srt = toSrt([seg(0, 1, 'one'), seg(1, 2, '   '), seg(2, 3, ''), seg(3, 4, 'four')]);
    expect(readSrtStrict(srt).map((c) => [c.n, c.text])).toEqual([[1, 'one'], [2, 'four']]);
  });

  it('clamps negative times to zero and never ends a cue before it starts', () => {
    const cues = readSrtStrict(toSrt([seg(-1.5, -0.2, 'early'), seg(5, 3, 'backwards'), seg(Number.NaN, 1, 'nan')]));
    expect(cues.map((c) => [c.startMs, c.endMs])).toEqual([[0, 0], [5000, 5000], [0, 1000]]);
  });

  it('keeps multi-line text but collapses blank lines and CRLF, which would end the cue early', () => {
    const srt = toSrt([seg(0, 2, 'first line\r\n\r\n  second line  \n\n\nthird'), seg(2, 3, 'next')]);
    expect(srt).not.toContain('\r');
    const cues = readSrtStrict(srt);
    expect(cues.map((c) => c.text)).toEqual(['first line\nsecond line\nthird', 'next']);
    expect(new SrtParser().fromSrt(srt).map((c) => c.text)).toEqual(['first line\nsecond line\nthird', 'next']);
  });

  it('keeps UTF-8 text as it is and never lets an arrow look like a timing line', () => {
    const cues = readSrtStrict(toSrt([seg(0, 1, 'Grüße, 你好 — «ça va?» 🎧'), seg(1, 2, 'a --> b')]));
    expect(cues[0].text).toBe('Grüße, 你好 — «ça va?» 🎧');
    expect(cues[1].text).not.toContain('-->');
  });

  it('is empty for an empty transcript', () => {
    expect(toSrt([])).toBe('');
    expect(toSrt([seg(0, 1, ' \n ')])).toBe('');
  });
});

describe('toVtt', () => {
  it('writes the header and dotted cue timings equal to the segments to the millisecond', () => {
    const vtt = toVtt(segments);
    expect(vtt.startsWith('WEBVTT\n\n')).toBe(true);
    expect(vtt).not.toContain('\r');
    const cues = readVttStrict(vtt);
    expect(cues).toEqual(segments.map((s) => ({ startMs: Math.round(s.start * 1000), endMs: Math.round(s.end * 1000), text: s.text })));
    expect(vtt).toContain('01:02:05.500 --> 01:02:06.042\nPast the first hour.\n\n');
  });

  it('escapes &, < and > so markup and arrows in speech stay text', () => {
    const vtt = toVtt([seg(0, 1, 'Tom & Jerry <b>loud</b> a --> b'), seg(1, 2, 'x')]);
    const [cue] = readVttStrict(vtt);
    expect(cue.text).toBe('Tom &amp; Jerry &lt;b&gt;loud&lt;/b&gt; a --&gt; b');
    // Only the two timing lines carry an arrow.
    expect(vtt.match(/-->/g)).toHaveLength(2);
  });

  it('shares the SRT rules: skipped empties, clamping, collapsed blank lines, rounding', () => {
    const vtt = toVtt([seg(-1, 0.0005, 'a\n\nb'), seg(2, 3, ''), seg(4, 3.5, 'c')]);
    expect(vtt).toBe('WEBVTT\n\n00:00:00.000 --> 00:00:00.001\na\nb\n\n00:00:04.000 --> 00:00:04.000\nc\n\n');
  });

  it('is just the header for an empty transcript', () => {
    expect(toVtt([])).toBe('WEBVTT\n');
    expect(toVtt([seg(0, 1, '')])).toBe('WEBVTT\n');
  });
});
