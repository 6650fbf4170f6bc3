import SrtParser from 'srt-parser-2';
import webvtt from 'webvtt-parser';
import { toSrt, toVtt } from '../../../src/modules/transcription/subtitles.js';
import type { TranscriptSegment } from '../../../src/providers/transcription/transcription.types.js';

const seg = (start: number, end: number, text: string, index = 1, speaker: string | null = null): TranscriptSegment => ({
  index,
  start,
  end,
  text,
  speaker,
});

/** webvtt-parser (w3c/webvtt.js) validates the whole file; no errors allowed. */
function vttErrors(vtt: string) {
  return new webvtt.WebVTTParser().parse(vtt).errors;
}

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
  if (block.lastIndex !== srt.length)
    throw new Error(`not strict SRT at offset ${block.lastIndex}: ${JSON.stringify(srt.slice(block.lastIndex, block.lastIndex + 40))}`);
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
/**
 * One cue per short segment, at the segment's times to the millisecond, except where the cue rules re-time it:
 * a cue stays at most 7 s on screen, and 20 characters need 1 s to be read (20 characters per second).
 */
const expected = [
  { startMs: 0, endMs: 2480, text: 'Welcome to the show.' },
  { startMs: 2480, endMs: 5123, text: 'Today we talk about sound.' },
  { startMs: 5123, endMs: 7500, text: 'Thanks for listening.' },
  { startMs: 61_001, endMs: 68_001, text: 'A long one.' },
  { startMs: 3_725_500, endMs: 3_726_500, text: 'Past the first hour.' },
];

describe('toSrt', () => {
  it('writes numbered cues that srt-parser-2 and a strict reader both read back to the millisecond', () => {
    const srt = toSrt(segments);
    expect(srt).not.toContain('\r');
    const strict = readSrtStrict(srt);
    expect(strict.map((c) => c.n)).toEqual([1, 2, 3, 4, 5]);
    const parsed = new SrtParser().fromSrt(srt);
    expect(parsed).toHaveLength(expected.length);
    expected.forEach((e, i) => {
      expect(strict[i]).toEqual({ n: i + 1, ...e });
      expect(parsed[i].id).toBe(String(i + 1));
      expect(Math.round(parsed[i].startSeconds * 1000)).toBe(e.startMs);
      expect(Math.round(parsed[i].endSeconds * 1000)).toBe(e.endMs);
      expect(parsed[i].text).toBe(e.text);
    });
  });

  it('writes the exact block format, including hours above zero', () => {
    expect(toSrt([seg(3725.5, 3726.8, 'Past the first hour.')])).toBe('1\n01:02:05,500 --> 01:02:06,800\nPast the first hour.\n\n');
    expect(toSrt([seg(0, 1, 'a'), seg(1, 2, 'b')])).toBe('1\n00:00:00,000 --> 00:00:01,000\na\n\n2\n00:00:01,000 --> 00:00:02,000\nb\n\n');
    expect(toSrt([seg(360_000, 360_001, 'x')])).toBe('1\n100:00:00,000 --> 100:00:01,000\nx\n\n');
  });

  it('rounds half a millisecond up and keeps float noise from shifting a cue', () => {
    // The next cue right after keeps the first from being lengthened to its minimum duration.
    expect(toSrt([seg(0.0005, 0.0015, 'x'), seg(0.0015, 1, 'y')])).toContain('00:00:00,001 --> 00:00:00,002\nx\n');
    expect(toSrt([seg(0.0004, 5.9996, 'x')])).toContain('00:00:00,000 --> 00:00:06,000');
    // 0.1 + 0.2 is 0.30000000000000004 in binary floating point.
    expect(toSrt([seg(0.1 + 0.2, 1.1 + 2.2, 'x')])).toContain('00:00:00,300 --> 00:00:03,300');
  });

  it('skips empty cues and still numbers consecutively', () => {
    const srt = toSrt([seg(0, 1, 'one'), seg(1, 2, '   '), seg(2, 3, ''), seg(3, 4, 'four')]);
    expect(readSrtStrict(srt).map((c) => [c.n, c.text])).toEqual([
      [1, 'one'],
      [2, 'four'],
    ]);
  });

  it('clamps negative times to zero, sorts cues and never ends a cue before it starts', () => {
    const cues = readSrtStrict(toSrt([seg(-1.5, -0.2, 'early'), seg(5, 3, 'backwards'), seg(Number.NaN, 1, 'nan')]));
    // 'early' has no time left before 'nan' starts; 'backwards' gets the minimum duration in the silence after it.
    expect(cues.map((c) => [c.startMs, c.endMs, c.text])).toEqual([
      [0, 0, 'early'],
      [0, 1000, 'nan'],
      [5000, 5833, 'backwards'],
    ]);
  });

  it('collapses line breaks, blank lines and CRLF (which would end the cue early) before breaking lines', () => {
    const srt = toSrt([seg(0, 2, 'first line\r\n\r\n  second line  \n\n\nthird'), seg(2, 3, 'next')]);
    expect(srt).not.toContain('\r');
    const cues = readSrtStrict(srt);
    expect(cues.map((c) => c.text)).toEqual(['first line second line third', 'next']);
    expect(new SrtParser().fromSrt(srt).map((c) => c.text)).toEqual(['first line second line third', 'next']);
  });

  it('splits a long segment into readable cues: at most two lines of 42 characters and 7 s each', () => {
    const text =
      'This is the kind of long segment a provider returns, nine and a half seconds of speech in one block. ' +
      'Nobody can read it as one cue, so it is cut at sentence and clause ends into cues that fit two lines.';
    const srt = toSrt([seg(10, 19.5, text)]);
    const cues = readSrtStrict(srt);
    expect(cues.length).toBeGreaterThan(1);
    expect(cues.map((c) => c.text.replace(/\n/g, ' ')).join(' ')).toBe(text);
    expect(cues[0].startMs).toBe(10_000);
    expect(cues[cues.length - 1].endMs).toBeGreaterThanOrEqual(19_500);
    for (const c of cues) {
      const lines = c.text.split('\n');
      expect(lines.length).toBeLessThanOrEqual(2);
      for (const l of lines) expect(l.length).toBeLessThanOrEqual(42);
      expect(c.endMs - c.startMs).toBeLessThanOrEqual(7000);
    }
    cues.slice(1).forEach((c, i) => expect(c.startMs).toBeGreaterThanOrEqual(cues[i].endMs));
    expect(new SrtParser().fromSrt(srt)).toHaveLength(cues.length);
  });

  it('has no speaker markup', () => {
    expect(toSrt([seg(0, 2, 'Hello there.', 1, 'Speaker 1')])).toBe('1\n00:00:00,000 --> 00:00:02,000\nHello there.\n\n');
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
  it('writes the header and dotted cue timings equal to the SRT ones to the millisecond', () => {
    const vtt = toVtt(segments);
    expect(vtt.startsWith('WEBVTT\n\n')).toBe(true);
    expect(vtt).not.toContain('\r');
    const cues = readVttStrict(vtt);
    expect(cues).toEqual(expected);
    expect(vtt).toContain('01:02:05.500 --> 01:02:06.500\nPast the first hour.\n\n');
    expect(vttErrors(vtt)).toEqual([]);
    const parsed = new webvtt.WebVTTParser().parse(vtt).cues;
    expect(parsed.map((c) => [Math.round(c.startTime * 1000), Math.round(c.endTime * 1000), c.text])).toEqual(
      expected.map((e) => [e.startMs, e.endMs, e.text]),
    );
  });

  it('marks the speaker with a voice span, escaped', () => {
    const vtt = toVtt([seg(0, 2, 'Hello there.', 1, 'Speaker 1'), seg(2, 4, 'Hi.', 2, 'A<b> & >C\nD'), seg(4, 6, 'Nobody.', 3)]);
    expect(vtt).toBe(
      'WEBVTT\n\n' +
        '00:00:00.000 --> 00:00:02.000\n<v Speaker 1>Hello there.\n\n' +
        '00:00:02.000 --> 00:00:04.000\n<v A&lt;b&gt; &amp; &gt;C D>Hi.\n\n' +
        '00:00:04.000 --> 00:00:06.000\nNobody.\n\n',
    );
    const { cues, errors } = new webvtt.WebVTTParser().parse(vtt);
    expect(errors).toEqual([]);
    expect(cues[0].tree.children[0]).toMatchObject({ type: 'object', name: 'v', value: 'Speaker 1' });
    expect(cues[1].tree.children[0]).toMatchObject({ type: 'object', name: 'v' });
    expect(cues[2].tree.children[0]).toMatchObject({ type: 'text', value: 'Nobody.' });
  });

  it('escapes &, < and > so markup and arrows in speech stay text', () => {
    const vtt = toVtt([seg(0, 1, 'Tom & Jerry <b>loud</b> a --> b'), seg(1, 2, 'x')]);
    const [cue] = readVttStrict(vtt);
    expect(cue.text).toBe('Tom &amp; Jerry &lt;b&gt;loud&lt;/b&gt; a --&gt; b');
    // Only the two timing lines carry an arrow.
    expect(vtt.match(/-->/g)).toHaveLength(2);
    expect(vttErrors(vtt)).toEqual([]);
    // The parser's default entity table lacks the `;` forms, so it is given them (as its README suggests).
    const decoded = new webvtt.WebVTTParser({ '&amp;': '&', '&lt;': '<', '&gt;': '>' }).parse(vtt).cues[0].tree.children;
    expect(decoded).toEqual([{ type: 'text', value: 'Tom & Jerry <b>loud</b> a --> b' }]);
  });

  it('shares the SRT rules: skipped empties, clamping, collapsed blank lines, rounding', () => {
    const vtt = toVtt([seg(-1, 0.0005, 'a\n\nb'), seg(2, 3, ''), seg(4, 3.5, 'c')]);
    // Both cues get the minimum duration (833 ms) in the silence after them.
    expect(vtt).toBe('WEBVTT\n\n00:00:00.000 --> 00:00:00.833\na b\n\n00:00:04.000 --> 00:00:04.833\nc\n\n');
    expect(toSrt([seg(-1, 0.0005, 'a\n\nb'), seg(2, 3, ''), seg(4, 3.5, 'c')])).toBe(
      '1\n00:00:00,000 --> 00:00:00,833\na b\n\n2\n00:00:04,000 --> 00:00:04,833\nc\n\n',
    );
    expect(vttErrors(vtt)).toEqual([]);
  });

  it('is just the header for an empty transcript', () => {
    expect(toVtt([])).toBe('WEBVTT\n');
    expect(toVtt([seg(0, 1, '')])).toBe('WEBVTT\n');
    expect(vttErrors('WEBVTT\n')).toEqual([]);
  });
});
