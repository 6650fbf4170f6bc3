import type { FakeSite } from '../fakes/site.fake.js';
import type { Harness } from '../support/harness.js';
import { transcriptionWorld, type FakeOpenAi, type TranscriptionWorld } from '../support/world.js';
import { describeRecordingSubtitles, speechLike } from '../support/recording-subtitles.js';
import { waitFor } from '../support/wait-for.js';
import { type TranscriptionBody, transcriptionBody, jobBody } from '../support/bodies.js';
import { lavfiMp3 } from '../support/media.js';

describe('long media through an OpenAI-compatible server', () => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;
  let openai: FakeOpenAi;
  beforeAll(async () => {
    world = await transcriptionWorld({
      media: [{ path: '/lecture.mp3', bytes: speechLike(150) }],
      // A server that works 8 ms for each second of audio, so a piece takes a moment a client can see.
      openai: { msPerAudioSecond: 8 },
      // Pieces of 40 s although one upload (150 s is 600 kB) would fit under the 25 MiB cap.
      env: { OPENAI_PIECE_SECONDS: '40', OPENAI_CONCURRENCY: '2' },
    });
    ({ h, site, openai } = world);
  }, 60_000);
  afterAll(() => world?.close());

  it('cuts at pauses into pieces transcribed in parallel and lays them on one time line, through both doors', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/lecture.mp3` }, key);
    expect(res.statusCode).toBe(200);
    const body = transcriptionBody(res);
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
    expect(body.segments.at(-1)?.end).toBeGreaterThan(145);
    expect(await h.balance(accountId)).toEqual({ available: 7, held: 0 });

    openai.requests.length = 0;
    const gql = await h.gql<{ transcribe: TranscriptionBody }>(
      `mutation($i: TranscribeInput!) { transcribe(input: $i) { durationSeconds segments { start end } credits { charged } } }`,
      { i: { mediaUrl: `${site.origin}/lecture.mp3` } },
      key,
    );
    expect(gql.errors).toBeUndefined();
    expect(openai.requests).toHaveLength(4);
    expect(gql.data.transcribe.segments.map((s: { start: number }) => s.start)).toEqual(
      body.segments.map((s: { start: number }) => s.start),
    );
  });

  it('moves a queued job’s progress piece by piece', async () => {
    const { key } = await h.account({ credits: 10 });
    const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/lecture.mp3` }, key, { prefer: 'respond-async' });
    const seen: number[] = [];
    // Sampled every 20 ms until the job succeeds: the samples are what is checked.
    await waitFor(
      async () => {
        const job = jobBody(
          await h.request('GET', `/api/jobs/${res.json<{ id: string }>().id}`, { headers: { authorization: `Bearer ${key}` } }),
        );
        seen.push(job.progress);
        if (job.status !== 'SUCCEEDED') throw new Error(`the job is ${job.status} at ${job.progress}`);
        return true;
      },
      { describe: 'the job to succeed', timeout: 20_000, interval: 20 },
    );
    // 0.3 once the audio is ready, then up with the audio transcribed, piece by piece, to 0.95; then 1. Never back.
    seen.forEach((p, i) => i > 0 && expect(p).toBeGreaterThanOrEqual(seen[i - 1]));
    expect(seen.some((p) => p > 0.3 && p < 0.95)).toBe(true);
    expect(seen.filter((p) => p > 0.3 && p < 1).every((p) => p <= 0.95 + 1e-6)).toBe(true);
    expect(seen.at(-1)).toBe(1);
  });
});

// Half an hour in pieces of ten minutes is in long-media.long.test.ts (`npm run test:long`).
describeRecordingSubtitles(180, 60);

describe('silence', () => {
  let world: TranscriptionWorld;
  let site: FakeSite;
  let hQuiet: Harness;
  beforeAll(async () => {
    const bytes = lavfiMp3('anullsrc=r=22050:cl=mono', ['-t', '20']);
    world = await transcriptionWorld({
      media: [{ path: '/silence.mp3', bytes }],
      // What Whisper answers for a recording with nothing said in it.
      openai: {
        respond: () => ({ status: 200, body: { task: 'transcribe', language: 'english', duration: 20, text: '', segments: [] } }),
      },
      queue: false,
    });
    ({ h: hQuiet, site } = world);
  }, 60_000);
  afterAll(() => world?.close());

  it('transcribes silence as an empty transcript, charged per the contract, through both doors', async () => {
    const { key, accountId } = await hQuiet.account({ credits: 5 });
    const rest = await hQuiet.rest('/api/transcribe', { mediaUrl: `${site.origin}/silence.mp3` }, key);
    expect(rest.statusCode).toBe(200);
    expect(rest.json()).toMatchObject({ text: '', segments: [], credits: { charged: 1, balance: 4 } });
    const gql = await hQuiet.gql<{ transcribe: unknown }>(
      `mutation($i: TranscribeInput!) { transcribe(input: $i) { text segments { text } srt vtt credits { charged } } }`,
      { i: { mediaUrl: `${site.origin}/silence.mp3` } },
      key,
    );
    expect(gql.data.transcribe).toEqual({ text: '', segments: [], srt: '', vtt: 'WEBVTT\n', credits: { charged: 1 } });
    expect(await hQuiet.balance(accountId)).toEqual({ available: 3, held: 0 });
  });
});
