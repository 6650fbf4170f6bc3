import SrtParser from 'srt-parser-2';
import webvtt from 'webvtt-parser';
import { buildCues, DEFAULT_CUE_RULES, type Cue, type CueRules } from '../../../src/modules/transcription/cue-builder.js';
import { toSrt, toVtt } from '../../../src/modules/transcription/subtitles.js';
import type { TranscriptSegment, TranscriptWord } from '../../../src/providers/transcription/transcription.types.js';

const R = DEFAULT_CUE_RULES;
const seg = (start: number, end: number, text: string, extra: Partial<TranscriptSegment> = {}): TranscriptSegment => ({
  index: 1,
  start,
  end,
  text,
  speaker: null,
  ...extra,
});
const word = (start: number, end: number, text: string, speaker?: string | null): TranscriptWord => ({ start, end, text, speaker });
/** Words of the text, timed one after another from `start`, `each` seconds long. */
const timed = (start: number, text: string, each = 0.3, speaker?: string | null): TranscriptWord[] =>
  text.split(' ').map((t, i) => word(start + i * each, start + (i + 1) * each - 0.02, t, speaker));
const withWords = (words: TranscriptWord[], extra: Partial<TranscriptSegment> = {}): TranscriptSegment =>
  seg(words[0].start, words[words.length - 1].end, words.map((w) => w.text.trim()).join(' '), { words, ...extra });
const duration = (c: Cue) => c.endMs - c.startMs;
const textOf = (c: Cue) => c.lines.join(' ');
const charsOf = (c: Cue) => c.lines.reduce((n, l) => n + l.length, 0);
const cps = (c: Cue) => (charsOf(c) * 1000) / duration(c);

// ---------------------------------------------------------------------------------------------------------------
// A deterministic 30-minute transcript: two speakers, sentences of 4-20 words, ~9.5 s segments like OpenAI's.

/** mulberry32: a small seeded PRNG, so the transcript is the same on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VOCABULARY = (
  'we so it is to be on at in an of or if my me up us go do no he by as ' +
  'the and you that was for are with his they this have from one had word but not what all were when your can said ' +
  'there use each which she how their will other about out many then them these some her would make like him into time ' +
  'has look two more write see number way could people than first water been call who oil its now find long down day did ' +
  'get come made may part over new sound take only little work know place year live back give most very after thing our ' +
  'just name good sentence man think say great where help through much before line right too mean old any same tell boy ' +
  'follow came want show also around form three small set put end does another well large must big even such because turn ' +
  'here why ask went men read need land different home move try kind hand picture again change play spell air away animal ' +
  'house point page letter mother answer found study still learn should america world between family question morning ' +
  'important together mountain something beautiful everything yesterday afternoon somewhere interview community ' +
  'government experience information development understand microphone recording listening podcast episode ' +
  'conversation remember actually probably basically absolutely certainly definitely especially particular'
).split(' ');

interface Spoken {
  text: string;
  speaker: string;
}

function transcript(seed = 20261123, minutes = 30): { segments: TranscriptSegment[]; spoken: Spoken[] } {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)];
  const words: (TranscriptWord & { speaker: string })[] = [];
  let t = 0.4;
  let speaker = 'Speaker 1';
  let sentencesLeft = 2 + Math.floor(rnd() * 4);
  while (t < minutes * 60) {
    const n = 4 + Math.floor(rnd() * 17);
    // Now and then a sentence is rushed: every word as short as 0.25 s, barely a gap between them.
    const rushed = rnd() < 0.1;
    for (let i = 0; i < n; i++) {
      let w = pick(VOCABULARY);
      if (i === 0) w = w[0].toUpperCase() + w.slice(1);
      if (i === n - 1) w += rnd() < 0.75 ? '.' : rnd() < 0.6 ? '?' : '!';
      else if (i > 1 && rnd() < 0.08) w += ',';
      // Longer words take longer to say: 0.25 s for two letters up to 0.5 s for ten, with a little jitter.
      const letters = w.replace(/[^a-z]/gi, '').length;
      const len = rushed ? 0.25 + rnd() * 0.03 : Math.min(0.5, Math.max(0.25, 0.25 + ((letters - 2) / 8) * 0.25 + (rnd() - 0.5) * 0.06));
      words.push({ start: t, end: t + len, text: w, speaker });
      t += len + (rushed ? 0.01 + rnd() * 0.02 : 0.02 + rnd() * 0.1);
      if (i < n - 1 && rnd() < 0.01) t += 2; // a rare hesitation mid-sentence
    }
    t += 0.15 + rnd() * 0.3;
    if (rnd() < 0.12) t += 2; // an occasional pause between sentences
    if (--sentencesLeft === 0) {
      speaker = speaker === 'Speaker 1' ? 'Speaker 2' : 'Speaker 1';
      sentencesLeft = 2 + Math.floor(rnd() * 4);
      t += 0.3 + rnd() * 0.5;
    }
  }
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  // Segments of up to ~9.5 s, cut at a speaker change too (as diarizing providers do).
  const segments: TranscriptSegment[] = [];
  let current: TranscriptWord[] = [];
  const close = () => {
    if (!current.length) return;
    segments.push({
      index: segments.length + 1,
      start: current[0].start,
      end: current[current.length - 1].end,
      text: current.map((w) => w.text.trim()).join(' '),
      speaker: current[0].speaker ?? null,
      words: current,
    });
    current = [];
  };
  for (const w of words) {
    if (current.length && (w.end - current[0].start > 9.5 || w.speaker !== current[0].speaker)) close();
    // Some providers put the space before the word into it.
    current.push({ start: r3(w.start), end: r3(w.end), text: rnd() < 0.3 ? ` ${w.text}` : w.text, speaker: w.speaker });
  }
  close();
  return { segments, spoken: words.map((w) => ({ text: w.text, speaker: w.speaker })) };
}

interface Report {
  cues: number;
  maxLine: number;
  maxDurationMs: number;
  minDurationMs: number;
  withinCps: number;
}

/** Every rule, checked on every cue; returns the numbers for the record. */
function checkAll(cues: Cue[], spoken: Spoken[], rules: CueRules = R): Report {
  expect(cues.length).toBeGreaterThan(0);
  let within = 0;
  cues.forEach((c, i) => {
    const next = cues[i + 1];
    expect(c.lines.length).toBeGreaterThanOrEqual(1);
    expect(c.lines.length).toBeLessThanOrEqual(rules.maxLines);
    for (const line of c.lines) {
      expect(line.length).toBeLessThanOrEqual(rules.maxLineChars);
      expect(line).toBe(line.trim());
      expect(line).not.toMatch(/[\r\n]/);
      expect(line).not.toBe('');
    }
    expect(Number.isInteger(c.startMs) && Number.isInteger(c.endMs)).toBe(true);
    expect(c.startMs).toBeGreaterThanOrEqual(0);
    expect(duration(c)).toBeGreaterThan(0);
    expect(duration(c)).toBeLessThanOrEqual(rules.maxDurationMs);
    if (next) {
      expect(next.startMs).toBeGreaterThanOrEqual(c.startMs);
      expect(c.endMs).toBeLessThanOrEqual(next.startMs);
    }
    // Long enough to read, unless the next cue starts sooner: then it runs right up to it.
    if (duration(c) < rules.minDurationMs) {
      expect(next).toBeDefined();
      expect(next.startMs).toBeLessThan(c.startMs + rules.minDurationMs);
      expect(c.endMs).toBe(next.startMs);
    }
    // Slow enough to read, unless there was no silence left to extend into.
    if (cps(c) <= rules.maxCharsPerSecond) within++;
    else expect(c.endMs).toBe(Math.min(next ? next.startMs : Infinity, c.startMs + rules.maxDurationMs));
  });
  expect(within / cues.length).toBeGreaterThanOrEqual(0.95);

  // Every word exactly once, in order, and never two speakers in one cue.
  let w = 0;
  for (const c of cues) {
    for (const token of textOf(c).split(' ')) {
      expect(token).toBe(spoken[w].text);
      expect(c.speaker).toBe(spoken[w].speaker);
      w++;
    }
  }
  expect(w).toBe(spoken.length);

  return {
    cues: cues.length,
    maxLine: Math.max(...cues.flatMap((c) => c.lines.map((l) => l.length))),
    maxDurationMs: Math.max(...cues.map(duration)),
    minDurationMs: Math.min(...cues.map(duration)),
    withinCps: within / cues.length,
  };
}

/** srt-parser-2 reads back exactly the cues, to the millisecond. */
function checkSrt(segments: TranscriptSegment[], cues: Cue[]): void {
  const srt = toSrt(segments);
  expect(srt).not.toContain('\r');
  const parsed = new SrtParser().fromSrt(srt);
  expect(parsed).toHaveLength(cues.length);
  parsed.forEach((p, i) => {
    expect(p.id).toBe(String(i + 1));
    expect(Math.round(p.startSeconds * 1000)).toBe(cues[i].startMs);
    expect(Math.round(p.endSeconds * 1000)).toBe(cues[i].endMs);
    expect(p.text).toBe(cues[i].lines.join('\n'));
  });
}

/** webvtt-parser validates the file (zero errors) and reads back the cues and their voice spans. */
function checkVtt(segments: TranscriptSegment[], cues: Cue[]): void {
  const vtt = toVtt(segments);
  expect(vtt).not.toContain('\r');
  const { cues: parsed, errors } = new webvtt.WebVTTParser().parse(vtt);
  expect(errors).toEqual([]);
  expect(parsed).toHaveLength(cues.length);
  parsed.forEach((p, i) => {
    expect(Math.round(p.startTime * 1000)).toBe(cues[i].startMs);
    expect(Math.round(p.endTime * 1000)).toBe(cues[i].endMs);
    const speaker = cues[i].speaker;
    if (speaker) {
      expect(p.text.startsWith(`<v ${speaker}>`)).toBe(true);
      expect(p.text).toMatch(/^<v Speaker [12]>/);
      expect(p.tree.children[0]).toMatchObject({ type: 'object', name: 'v', value: speaker });
      expect(p.text.slice(`<v ${speaker}>`.length)).toBe(cues[i].lines.join('\n'));
    } else {
      expect(p.text).toBe(cues[i].lines.join('\n'));
    }
  });
}

describe('buildCues on a 30-minute transcript', () => {
  const { segments, spoken } = transcript();

  it('is a realistic 30-minute input', () => {
    const last = segments[segments.length - 1];
    expect(last.end).toBeGreaterThanOrEqual(1800);
    expect(segments.length).toBeGreaterThan(180);
    expect(Math.max(...segments.map((s) => s.end - s.start))).toBeLessThanOrEqual(9.5);
    expect(new Set(spoken.map((s) => s.speaker))).toEqual(new Set(['Speaker 1', 'Speaker 2']));
    expect(segments.some((s) => s.words!.some((w) => w.text.startsWith(' ')))).toBe(true);
  });

  it('with word timings: every cue follows every rule, starts on its first word and reads back through both parsers', () => {
    const cues = buildCues(segments);
    const report = checkAll(cues, spoken);
    // A cue appears when its first word is said and stays at least until its last word is said.
    const flat = segments.flatMap((s) => s.words!);
    let w = 0;
    for (const c of cues) {
      const n = textOf(c).split(' ').length;
      expect(c.startMs).toBe(Math.round(flat[w].start * 1000));
      expect(c.endMs).toBeGreaterThanOrEqual(Math.round(flat[w + n - 1].end * 1000));
      w += n;
    }
    checkSrt(segments, cues);
    checkVtt(segments, cues);
    if (process.env.CUE_STATS) console.info('with words', report);
  });

  it('without word timings: the same rules hold and no cue leaves its segment', () => {
    const plain = segments.map(({ words: _words, ...s }) => s);
    const cues = buildCues(plain);
    const report = checkAll(cues, spoken);
    // Walk the segments alongside the cues: each cue's words come from one segment and it starts inside it.
    let s = 0;
    let used = 0;
    for (const c of cues) {
      const n = textOf(c).split(' ').length;
      const words = plain[s].text.split(' ').length;
      expect(c.startMs).toBeGreaterThanOrEqual(Math.round(plain[s].start * 1000));
      expect(c.startMs).toBeLessThan(Math.round(plain[s].end * 1000));
      used += n;
      expect(used).toBeLessThanOrEqual(words);
      if (used === words) {
        s++;
        used = 0;
      }
    }
    expect(s).toBe(plain.length);
    checkSrt(plain, cues);
    checkVtt(plain, cues);
    if (process.env.CUE_STATS) console.info('without words', report);
  });

  it('is deterministic', () => {
    expect(buildCues(transcript().segments)).toEqual(buildCues(segments));
  });
});

describe('buildCues rules', () => {
  it('makes no cue from nothing', () => {
    expect(buildCues([])).toEqual([]);
    expect(buildCues([seg(0, 1, ''), seg(1, 2, ' \r\n\t '), seg(2, 3, '', { words: [word(2, 3, '  ')] })])).toEqual([]);
  });

  it('keeps a short segment as one cue, timed as given', () => {
    expect(buildCues([seg(1.5, 3.25, 'Welcome to the show.', { speaker: 'Host' })])).toEqual([
      { startMs: 1500, endMs: 3250, lines: ['Welcome to the show.'], speaker: 'Host' },
    ]);
  });

  it('breaks two lines at word boundaries, balanced, within 42 characters', () => {
    const [cue] = buildCues([seg(0, 5, 'This sentence is a little bit longer than one line can hold')]);
    expect(cue.lines).toEqual(['This sentence is a little bit', 'longer than one line can hold']);
    for (const l of cue.lines) expect(l.length).toBeLessThanOrEqual(42);
  });

  it('prefers a line break after punctuation when it is nearly balanced, and not after an article', () => {
    const [a] = buildCues([seg(0, 5, 'When we got to the market, it was closed for the holiday')]);
    expect(a.lines).toEqual(['When we got to the market,', 'it was closed for the holiday']);
    const [b] = buildCues([seg(0, 5, 'Yesterday I walked all the way to the old harbour in town')]);
    expect(b.lines[0].endsWith(' the')).toBe(false);
  });

  it('writes the text on one line when it fits', () => {
    expect(buildCues([seg(0, 3, 'Forty characters of text on one line ok.')])[0].lines).toHaveLength(1);
  });

  it('splits a long segment without words at sentence ends, in proportion to characters', () => {
    const text =
      'The first sentence is here. The second sentence is a bit longer than the first one. ' +
      'Then a third one, with a clause, that goes on for quite a while before it finally ends.';
    const cues = buildCues([seg(10, 19.5, text)]);
    expect(cues.length).toBeGreaterThan(1);
    expect(cues.map(textOf).join(' ')).toBe(text);
    // Cues tile the segment, each span in proportion to its characters.
    expect(cues[0].startMs).toBe(10_000);
    expect(cues[cues.length - 1].endMs).toBe(19_500);
    for (let i = 1; i < cues.length; i++) expect(cues[i].startMs).toBe(cues[i - 1].endMs);
    for (const c of cues) {
      expect(c.lines.length).toBeLessThanOrEqual(2);
      expect(duration(c) / 9500).toBeCloseTo((textOf(c).length + 1) / (text.length + 1), 1);
    }
    // The first break falls after a sentence.
    expect(textOf(cues[0])).toMatch(/\.$/);
  });

  it('groups words across provider segments and breaks after sentences', () => {
    const words = timed(0, 'So here is the thing. I went to the shop on Monday and they had run out of bread again.', 0.35);
    const cues = buildCues([withWords(words.slice(0, 7)), withWords(words.slice(7))]);
    expect(cues.map(textOf)).toEqual(['So here is the thing.', 'I went to the shop on Monday and they had run out of bread again.']);
    // Balanced, and the conjunction goes with the clause it opens.
    expect(cues[1].lines).toEqual(['I went to the shop on Monday', 'and they had run out of bread again.']);
    expect(cues[0].startMs).toBe(0);
    expect(cues[1].startMs).toBe(Math.round(words[5].start * 1000));
  });

  it('takes punctuation and casing from the segment text when the words have none (OpenAI), across segments', () => {
    // OpenAI's words: no punctuation; a word may be filed under the neighbouring segment by its time.
    const said = timed(0, 'welcome to the show today we talk about sound it travels as a wave thanks for listening', 0.35);
    const cues = buildCues([
      withWords(said.slice(0, 5), { text: 'Welcome to the show. Today we talk' }),
      withWords(said.slice(5, 12), { text: 'about sound — it travels as a wave.' }),
      withWords(said.slice(12), { text: 'Thanks for listening!' }),
    ]);
    expect(cues.map(textOf)).toEqual(['Welcome to the show. Today we talk about sound — it travels as a wave.', 'Thanks for listening!']);
    expect(cues[0].lines).toEqual(['Welcome to the show. Today we talk', 'about sound — it travels as a wave.']);
    // A word the text lacks keeps its own form; text the words lack is left out.
    expect(buildCues([withWords(timed(0, 'so um we went home', 0.3), { text: 'So we went home, finally.' })]).map(textOf)).toEqual([
      'So um we went home,',
    ]);
  });

  it('starts a new cue at every speaker change (word speaker first, then segment speaker)', () => {
    const words = [...timed(0, 'Are you coming', 0.3), ...timed(0.9, 'Yes', 0.3, 'Guest'), ...timed(1.2, 'great see you there', 0.3)];
    const cues = buildCues([withWords(words, { speaker: 'Host' })]);
    expect(cues.map((c) => [c.speaker, textOf(c)])).toEqual([
      ['Host', 'Are you coming'],
      ['Guest', 'Yes'],
      ['Host', 'great see you there'],
    ]);
    // Neither cue overlaps the next, even though extending for the minimum duration would want to.
    expect(cues[0].endMs).toBeLessThanOrEqual(cues[1].startMs);
    expect(cues[1].endMs).toBe(cues[2].startMs);
  });

  it('ends a cue at a long pause', () => {
    const cues = buildCues([withWords([...timed(0, 'Well I', 0.3), ...timed(2.6, 'do not know', 0.3)])]);
    expect(cues.map(textOf)).toEqual(['Well I', 'do not know']);
    expect(cues[0].endMs).toBe(833);
  });

  it('never lets a cue last more than 7 s, unless one word does', () => {
    const slow = timed(0, 'one two three four five six seven eight nine ten eleven twelve', 0.9);
    const cues = buildCues([withWords(slow)]);
    expect(cues.length).toBeGreaterThan(1);
    for (const c of cues) expect(duration(c)).toBeLessThanOrEqual(7000);
    expect(buildCues([seg(0, 600, 'Music.')])).toEqual([{ startMs: 0, endMs: 7000, lines: ['Music.'], speaker: null }]);
    expect(buildCues([withWords([word(0, 9, 'Ohhhhh')])])).toEqual([{ startMs: 0, endMs: 9000, lines: ['Ohhhhh'], speaker: null }]);
  });

  it('extends a short or fast cue into the silence after it, never past the next cue', () => {
    const fast = 'Extraordinarily complicated circumstances';
    const cues = buildCues([seg(0, 0.5, fast), seg(1, 1.2, 'Hi.'), seg(1.5, 1.6, 'Go.')]);
    // 41 characters want 2.05 s at 20 cps: as far as the next cue allows.
    expect(cues.map((c) => [c.startMs, c.endMs])).toEqual([
      [0, 1000],
      [1000, 1500],
      [1500, 2333],
    ]);
    const [alone] = buildCues([seg(0, 0.5, fast)]);
    expect(alone.endMs).toBe(2050);
  });

  it('honours a minimum gap when the rules ask for one', () => {
    const rules = { ...R, minGapMs: 83 };
    const cues = buildCues([seg(0, 1, 'One.'), seg(1, 2, 'Two.'), seg(2, 2.05, 'Three.')], rules);
    for (let i = 1; i < cues.length; i++) expect(cues[i].startMs - cues[i - 1].endMs).toBeGreaterThanOrEqual(83);
    expect(cues[1].startMs).toBe(1000);
  });

  it('never splits a word longer than a line: it stands alone on its line', () => {
    const long = 'Pneumonoultramicroscopicsilicovolcanoconiosis-and-then-some'; // 59 characters
    expect(buildCues([seg(0, 4, long)])[0].lines).toEqual([long]);
    const [cue] = buildCues([seg(0, 4, `look at ${long}`)]);
    expect(cue.lines).toEqual(['look at', long]);
    const cues = buildCues([withWords(timed(0, `it is ${long} again and again`, 0.5))]);
    expect(cues.flatMap((c) => c.lines)).toContain(long);
    for (const l of cues.flatMap((c) => c.lines)) if (l !== long) expect(l.length).toBeLessThanOrEqual(42);
    expect(cues.map(textOf).join(' ')).toBe(`it is ${long} again and again`);
  });

  it('collapses CRLF, newlines and blank lines to spaces before breaking lines', () => {
    expect(buildCues([seg(0, 2, 'first line\r\n\r\n  second line  \n\n\nthird\u2028fourth')])[0].lines).toEqual([
      'first line second line third fourth',
    ]);
    expect(buildCues([withWords([word(0, 0.4, ' Hello,\r\n'), word(0.5, 1, '\n world ')])])[0].lines).toEqual(['Hello, world']);
  });

  it('clamps a segment whose end is before its start', () => {
    expect(buildCues([seg(5, 3, 'backwards')])).toEqual([{ startMs: 5000, endMs: 5833, lines: ['backwards'], speaker: null }]);
  });

  it('sorts overlapping provider segments and starts each cue where the previous one ends', () => {
    const cues = buildCues([
      seg(4, 8, 'The third one, out of order.'),
      seg(0, 3, 'The first one speaks here.'),
      seg(2.5, 4.5, 'The second one overlaps.'),
    ]);
    expect(cues.map(textOf)).toEqual(['The first one speaks here.', 'The second one overlaps.', 'The third one, out of order.']);
    expect(cues.map((c) => [c.startMs, c.endMs])).toEqual([
      [0, 3000],
      [3000, 4500],
      [4500, 8000],
    ]);
  });

  it('never groups words that step back in time (word-timed segments out of order)', () => {
    const later = withWords(timed(10, 'This comes later.', 0.3));
    const earlier = withWords(timed(0, 'This comes first.', 0.3));
    const cues = buildCues([later, earlier]);
    expect(cues.map(textOf)).toEqual(['This comes first.', 'This comes later.']);
    expect(cues[0].startMs).toBe(0);
    expect(cues[1].startMs).toBe(10_000);
  });

  it('treats non-finite and negative times as 0, and a word without time as following the previous one', () => {
    const cues = buildCues([
      seg(Number.NaN, Number.POSITIVE_INFINITY, 'nan'),
      seg(-3, -1, 'negative'),
      seg(10, 12, 'words', {
        words: [word(10, 10.5, 'left'), word(Number.NaN, Number.NaN, 'lost'), word(11, Number.NEGATIVE_INFINITY, 'right')],
      }),
    ]);
    for (const c of cues) {
      expect(Number.isFinite(c.startMs) && Number.isFinite(c.endMs)).toBe(true);
      expect(c.endMs).toBeGreaterThanOrEqual(c.startMs);
    }
    expect(cues.map(textOf)).toEqual(['nan', 'negative', 'left lost right']);
    expect(cues[2]).toMatchObject({ startMs: 10_000, endMs: 11_000 });
    expect(cues.slice(0, 2).map((c) => c.startMs)).toEqual([0, 0]);
  });

  it('cuts text in scripts without spaces at word boundaries (Intl.Segmenter), keeping lines within 42', () => {
    const zh =
      '你好，世界。这是一个很长的中文句子，没有空格，需要被分成几行字幕，以便观众可以阅读。我们再加一句话来测试一下字幕的分行效果，看看是否每一行都不超过四十二个字符。';
    const ja = '東京に行きます。「こんにちは」と言った。今日はとても良い天気ですね、散歩に行きましょうか。';
    for (const text of [zh, ja, zh + zh]) {
      const cues = buildCues([seg(0, 20, text)]);
      expect(cues.map((c) => c.lines.join('')).join('')).toBe(text);
      for (const c of cues) {
        expect(c.lines.length).toBeLessThanOrEqual(2);
        for (const l of c.lines) expect(l.length).toBeLessThanOrEqual(42);
      }
    }
    // Punctuation stays with the word before it; an opening bracket with the word after it.
    const lines = buildCues([seg(0, 20, ja + ja)]).flatMap((c) => c.lines);
    for (const l of lines) expect(l).not.toMatch(/^[。、，」]|「$/);
  });

  it('keeps a mixed-script line intact and counts UTF-16 code units', () => {
    expect(buildCues([seg(0, 2, 'Grüße, 你好 — «ça va?» 🎧')])[0].lines).toEqual(['Grüße, 你好 — «ça va?» 🎧']);
  });
});
