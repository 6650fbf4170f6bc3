import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import SrtParser from 'srt-parser-2';
import webvtt from 'webvtt-parser';
import { startFakeOpenAi } from '../fakes/openai.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, type Harness } from '../support/harness.js';

/** Sound for 8 s, then 1.3 s of silence, again and again: speech with pauses between sentences. */
function speechLike(seconds: number): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'mediagate-long-'));
  try {
    const out = join(dir, 'speech.mp3');
    const tone = `aevalsrc='0.4*sin(2*PI*220*t)*sin(2*PI*3*t)*lt(mod(t\\,9.3)\\,8)':s=22050:d=${seconds}`;
    execFileSync(process.env.FFMPEG_PATH ?? 'ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', tone, '-ac', '1', '-b:a', '64k', out]);
    return readFileSync(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('long media through an OpenAI-compatible server', () => {
  let h: Harness;
  let site: FakeSite;
  let openai: Awaited<ReturnType<typeof startFakeOpenAi>>;
  beforeAll(async () => {
    site = await startFakeSite();
    site.file('/lecture.mp3', speechLike(150), 'audio/mpeg');
    // A server that works 8 ms for each second of audio, so a piece takes a moment a client can see.
    openai = await startFakeOpenAi({ msPerAudioSecond: 8 });
    // Pieces of 40 s although one upload (150 s is 600 kB) would fit under the 25 MiB cap.
    h = await createHarness(
      { FETCH_ALLOW_HOSTS: site.hostPort, TRANSCRIBE_PROVIDERS: 'openai', OPENAI_BASE_URL: openai.baseUrl, OPENAI_PIECE_SECONDS: '40', OPENAI_CONCURRENCY: '2' },
      pino({ level: 'silent' }),
      { queue: true },
    );
  }, 60_000);
  afterAll(async () => {
    await h.close();
    await site.close();
    await openai.close();
  });

  it('cuts at pauses into pieces transcribed in parallel and lays them on one time line, through both doors', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/lecture.mp3` }, key);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    // Pieces run two at a time, so they arrive in any order; their file names keep the order.
    const uploads = [...openai.requests].sort((a, b) => a.fileName.localeCompare(b.fileName)).map((r) => r.fileBytes / 4000);
    expect(openai.requests.map((r) => r.fileName).sort()).toEqual(['piece-0000.mp3', 'piece-0001.mp3', 'piece-0002.mp3', 'piece-0003.mp3']);
    expect(uploads.length).toBe(4);
    // Every seam falls in a pause (8.0–9.3 s into each 9.3 s period), not in the sound.
    let at = 0;
    for (const seconds of uploads.slice(0, -1)) {
      at += seconds;
      const phase = at % 9.3;
      expect(phase).toBeGreaterThan(7.8);
      expect(phase).toBeLessThan(9.5);
      expect(seconds).toBeLessThanOrEqual(40 * 1.1 + 0.5);
    }
    expect(at + uploads.at(-1)!).toBeCloseTo(150, 0);
    expect(body.durationSeconds).toBeCloseTo(150, 0);
    expect(body.credits.charged).toBe(3);
    body.segments.forEach((s: { index: number; start: number; end: number }, i: number) => {
      expect(s.index).toBe(i + 1);
      if (i > 0) expect(s.start).toBeGreaterThanOrEqual(body.segments[i - 1].end);
    });
    expect(body.segments.at(-1).end).toBeGreaterThan(145);
    expect(await h.balance(accountId)).toEqual({ available: 7, held: 0 });

    openai.requests.length = 0;
    const gql = await h.gql(`mutation($i: TranscribeInput!) { transcribe(input: $i) { durationSeconds segments { start end } credits { charged } } }`, { i: { mediaUrl: `${site.origin}/lecture.mp3` } }, key);
    expect(gql.errors).toBeUndefined();
    expect(openai.requests).toHaveLength(4);
    expect(gql.data.transcribe.segments.map((s: { start: number }) => s.start)).toEqual(body.segments.map((s: { start: number }) => s.start));
  });

  it('moves a queued job’s progress piece by piece', async () => {
    const { key } = await h.account({ credits: 10 });
    const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/lecture.mp3` }, key, { prefer: 'respond-async' });
    const seen: number[] = [];
    for (let i = 0; i < 200; i++) {
      const job = (await h.request('GET', `/api/jobs/${res.json().id}`, { headers: { authorization: `Bearer ${key}` } })).json();
      seen.push(job.progress);
      if (job.status === 'SUCCEEDED') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    // 0.3 once the audio is ready, then up with the audio transcribed, piece by piece, to 0.95; then 1. Never back.
    seen.forEach((p, i) => i > 0 && expect(p).toBeGreaterThanOrEqual(seen[i - 1]));
    expect(seen.some((p) => p > 0.3 && p < 0.95)).toBe(true);
    expect(seen.filter((p) => p > 0.3 && p < 1).every((p) => p <= 0.95 + 1e-6)).toBe(true);
    expect(seen.at(-1)).toBe(1);
  });
});

describe('a 30-minute recording’s subtitles, and silence', () => {
  let h: Harness;
  let site: FakeSite;
  let openai: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let quiet: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let hQuiet: Harness;
  beforeAll(async () => {
    site = await startFakeSite();
    site.file('/half-hour.mp3', speechLike(1800), 'audio/mpeg');
    const dir = mkdtempSync(join(tmpdir(), 'mediagate-silence-'));
    const silent = join(dir, 'silence.mp3');
    execFileSync(process.env.FFMPEG_PATH ?? 'ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'anullsrc=r=22050:cl=mono', '-t', '20', silent]);
    site.file('/silence.mp3', readFileSync(silent), 'audio/mpeg');
    rmSync(dir, { recursive: true, force: true });
    openai = await startFakeOpenAi();
    // What Whisper answers for a recording with nothing said in it.
    quiet = await startFakeOpenAi({ respond: () => ({ status: 200, body: { task: 'transcribe', language: 'english', duration: 20, text: '', segments: [] } }) });
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort, TRANSCRIBE_PROVIDERS: 'openai', OPENAI_BASE_URL: openai.baseUrl });
    hQuiet = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort, TRANSCRIBE_PROVIDERS: 'openai', OPENAI_BASE_URL: quiet.baseUrl });
  }, 60_000);
  afterAll(async () => {
    await h.close();
    await hQuiet.close();
    await site.close();
    await openai.close();
    await quiet.close();
  });

  it('keeps every SRT and WebVTT cue readable, cue by cue', async () => {
    const { key } = await h.account({ credits: 80 });
    const res = await h.rest('/api/transcribe?format=srt', { mediaUrl: `${site.origin}/half-hour.mp3` }, key);
    expect(res.statusCode).toBe(200);
    // Pieces of at most about ten minutes, shorter toward the end while the audio was still being written.
    expect(openai.requests.length).toBeGreaterThanOrEqual(3);
    for (const r of openai.requests) expect(r.fileBytes / 4000).toBeLessThanOrEqual(661);
    const cues = new SrtParser().fromSrt(res.body);
    expect(cues.length).toBeGreaterThan(300);
    let fast = 0;
    cues.forEach((c, i) => {
      const lines = c.text.split('\n');
      expect(lines.length).toBeLessThanOrEqual(2);
      for (const line of lines) expect(line.length).toBeLessThanOrEqual(42);
      const duration = c.endSeconds - c.startSeconds;
      expect(duration).toBeLessThanOrEqual(7.0005);
      const next = cues[i + 1];
      if (next) {
        expect(next.startSeconds).toBeGreaterThanOrEqual(c.endSeconds);
        // Shorter than 0.833 s only where the next cue leaves no room.
        if (duration < 0.8325) expect(c.endSeconds).toBeCloseTo(next.startSeconds, 3);
      }
      if (c.text.replace(/\n/g, ' ').length / duration > 20.0001) fast++;
    });
    expect(fast / cues.length).toBeLessThan(0.05);
    expect(cues.at(-1)!.endSeconds).toBeGreaterThan(1790);
    const vtt = await h.rest('/api/transcribe?format=vtt', { mediaUrl: `${site.origin}/half-hour.mp3` }, key);
    expect(vtt.statusCode).toBe(200);
    const parsed = new webvtt.WebVTTParser().parse(vtt.body);
    expect(parsed.errors).toEqual([]);
    expect(parsed.cues.map((c) => [c.startTime, c.endTime])).toEqual(cues.map((c) => [c.startSeconds, c.endSeconds]));
  }, 60_000);

  it('transcribes silence as an empty transcript, charged per the contract, through both doors', async () => {
    const { key, accountId } = await hQuiet.account({ credits: 5 });
    const rest = await hQuiet.rest('/api/transcribe', { mediaUrl: `${site.origin}/silence.mp3` }, key);
    expect(rest.statusCode).toBe(200);
    expect(rest.json()).toMatchObject({ text: '', segments: [], credits: { charged: 1, balance: 4 } });
    const gql = await hQuiet.gql(`mutation($i: TranscribeInput!) { transcribe(input: $i) { text segments { text } srt vtt credits { charged } } }`, { i: { mediaUrl: `${site.origin}/silence.mp3` } }, key);
    expect(gql.data.transcribe).toEqual({ text: '', segments: [], srt: '', vtt: 'WEBVTT\n', credits: { charged: 1 } });
    expect(await hQuiet.balance(accountId)).toEqual({ available: 3, held: 0 });
  });
});
