import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHarness, type Harness } from '../support/harness.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { startFakeOpenAi } from '../fakes/openai.fake.js';
import { transcriptionWorld, type FakeOpenAi, type TranscriptionWorld } from '../support/world.js';
import { type TranscriptionBody, type ErrorBody, transcriptionBody, parseBody } from '../support/bodies.js';

const SRT_CUE = /^(\d+)\n(\d{2}):(\d{2}):(\d{2}),(\d{3}) --> (\d{2}):(\d{2}):(\d{2}),(\d{3})\n([^\n]+(?:\n[^\n]+)*)$/;
const seconds = (h: string, m: string, s: string, ms: string) => Number(h) * 3600 + Number(m) * 60 + Number(s) + Number(ms) / 1000;

/** A strict SRT reader: numbered cues from 1, exact timestamps, one blank line between cues. */
function readSrt(srt: string) {
  expect(srt.endsWith('\n\n')).toBe(true);
  return srt
    .slice(0, -2)
    .split('\n\n')
    .map((block, i) => {
      const m = SRT_CUE.exec(block);
      if (!m) throw new Error(`cue ${i + 1} is not strict SRT: ${JSON.stringify(block)}`);
      expect(Number(m[1])).toBe(i + 1);
      return { start: seconds(m[2], m[3], m[4], m[5]), end: seconds(m[6], m[7], m[8], m[9]), text: m[10] };
    });
}

/** Subtitles re-time the transcript into readable cues: the same words in order, in cues that keep the rules. */
function expectReadableCues(
  cues: { start: number; end: number; text: string }[],
  segments: { text: string; start: number; end: number }[],
  sameWords = true,
) {
  const words = (t: string) => t.split(/\s+/).filter(Boolean);
  if (sameWords) expect(cues.flatMap((c) => words(c.text))).toEqual(segments.flatMap((s) => words(s.text)));
  expect(cues.length).toBeLessThanOrEqual(segments.length);
  cues.forEach((c, i) => {
    const lines = c.text.split('\n');
    expect(lines.length).toBeLessThanOrEqual(2);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(42);
    expect(c.end - c.start).toBeLessThanOrEqual(7.0005);
    if (i > 0) expect(c.start).toBeGreaterThanOrEqual(cues[i - 1].end);
    expect(c.start).toBeGreaterThanOrEqual(segments[0].start);
  });
}

describe('transcribe', () => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;
  let openai: FakeOpenAi;

  beforeAll(async () => {
    world = await transcriptionWorld({
      openai: { apiKey: 'sk-test-secret-value' },
      media: [
        { path: '/talk.mp3', seconds: 75 },
        { path: '/short.mp4', seconds: 4, video: true },
        { path: '/silent.mp4', seconds: 2, video: true, audio: false },
        { path: '/notmedia.mp3', bytes: Buffer.from('this is not audio at all') },
      ],
      queue: false,
    });
    ({ h, site, openai } = world);
  });
  afterAll(() => world?.close());

  it('transcribes through an OpenAI-compatible server and charges per started minute', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3`, language: 'en' }, key);
    expect(res.statusCode).toBe(200);
    const body = transcriptionBody(res);
    expect(body).toMatchObject({
      status: 'SUCCEEDED',
      mediaUrl: `${site.origin}/talk.mp3`,
      language: 'en',
      provider: 'openai',
      credits: { charged: 2, balance: 8 },
    });
    expect(body.text.length).toBeGreaterThan(0);
    expect(body.segments.length).toBeGreaterThan(0);
    expect(body.segments[0]).toEqual({
      index: 1,
      start: expect.any(Number),
      end: expect.any(Number),
      text: expect.any(String),
      speaker: null,
      words: expect.any(Array),
    });
    expect(body.segments[0].words?.[0]).toEqual({ start: body.segments[0].start, end: expect.any(Number), text: 'Welcome' });
    expect(body.durationSeconds).toBeGreaterThan(74);
    const sent = openai.requests.at(-1)!;
    expect(sent.fields).toMatchObject({ model: 'whisper-1', response_format: 'verbose_json', language: 'en' });
    expect(sent.authorization).toBe('Bearer sk-test-secret-value');
    expect(await h.balance(accountId)).toEqual({ available: 8, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 8, held: 0 });

    const srt = await h.request('GET', `/api/transcriptions/${body.id}.srt`, { headers: { authorization: `Bearer ${key}` } });
    expect(srt.statusCode).toBe(200);
    expectReadableCues(readSrt(srt.body), body.segments);
    const vtt = await h.request('GET', `/api/transcriptions/${body.id}.vtt`, { headers: { authorization: `Bearer ${key}` } });
    expect(vtt.headers['content-type']).toMatch(/^text\/vtt/);
    expect(vtt.body.startsWith('WEBVTT\n\n')).toBe(true);
  });

  it('serves a finished transcription’s subtitles alike through both doors, and nothing else', async () => {
    const { key } = await h.account({ credits: 10 });
    const other = await h.account({ credits: 10 });
    const readOnly = await h.account({ credits: 10, scopes: ['transcribe'] });
    const done = transcriptionBody(await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/short.mp4` }, key));
    const parsed = parseBody(await h.rest('/api/parse', { url: `${site.origin}/short.mp4` }, key));
    const query = `query($id: ID!) { transcription(jobId: $id) { id status provider text credits { charged balance } srt vtt } }`;
    const viaGraphql = await h.gql<{ transcription: TranscriptionBody & { srt: string; vtt: string } }>(query, { id: done.id }, key);
    expect(viaGraphql.errors).toBeUndefined();
    expect(viaGraphql.data.transcription).toMatchObject({
      id: done.id,
      status: 'SUCCEEDED',
      provider: done.provider,
      text: done.text,
      credits: done.credits,
    });
    const srt = await h.request('GET', `/api/transcriptions/${done.id}.srt`, { headers: { authorization: `Bearer ${key}` } });
    const vtt = await h.request('GET', `/api/transcriptions/${done.id}.vtt`, { headers: { authorization: `Bearer ${key}` } });
    expect(viaGraphql.data.transcription.srt).toBe(srt.body);
    expect(viaGraphql.data.transcription.vtt).toBe(vtt.body);
    // A parse's job, another account's transcription, an unknown id: NOT_FOUND on both doors; no read scope: FORBIDDEN.
    for (const [id, caller, code, status] of [
      [parsed.id, key, 'NOT_FOUND', 404],
      [done.id, other.key, 'NOT_FOUND', 404],
      ['00000000-0000-4000-8000-000000000000', key, 'NOT_FOUND', 404],
      [done.id, readOnly.key, 'FORBIDDEN', 403],
    ] as const) {
      const rest = await h.request('GET', `/api/transcriptions/${id}.vtt`, { headers: { authorization: `Bearer ${caller}` } });
      expect([rest.statusCode, rest.json<ErrorBody>().error.code]).toEqual([status, code]);
      const gql = await h.gql(query, { id }, caller);
      expect(gql.errors?.[0].extensions.code).toBe(code);
    }
  });

  it('returns SRT for ?format=srt and for Accept: application/x-subrip, and WebVTT for Accept: text/vtt', async () => {
    const { key } = await h.account({ credits: 10 });
    const bySrtQuery = await h.request('POST', '/api/transcribe?format=srt', {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ mediaUrl: `${site.origin}/short.mp4` }),
    });
    expect(bySrtQuery.statusCode).toBe(200);
    expect(bySrtQuery.headers['content-type']).toMatch(/^application\/x-subrip/);
    expect(readSrt(bySrtQuery.body).length).toBeGreaterThan(0);
    const byAccept = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/short.mp4` }, key, { accept: 'application/x-subrip' });
    expect(byAccept.body).toBe(bySrtQuery.body);
    const vtt = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/short.mp4` }, key, { accept: 'text/vtt' });
    expect(vtt.body.startsWith('WEBVTT')).toBe(true);
    // q-values weigh: JSON refused outright, SRT preferred over a less wanted WebVTT.
    const notJson = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/short.mp4` }, key, {
      accept: 'application/json;q=0, text/vtt',
    });
    expect(notJson.headers['content-type']).toMatch(/^text\/vtt/);
    const weighed = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/short.mp4` }, key, {
      accept: 'text/vtt;q=0.5, application/x-subrip',
    });
    expect(weighed.body).toBe(bySrtQuery.body);
  });

  it('offers srt and vtt fields through GraphQL', async () => {
    const { key } = await h.account({ credits: 10 });
    const res = await h.gql<{ transcribe: TranscriptionBody & { srt: string; vtt: string } }>(
      `mutation($i: TranscribeInput!) { transcribe(input: $i) { id status language text segments { index start end text words { start end text speaker } } srt vtt credits { charged balance } } }`,
      { i: { mediaUrl: `${site.origin}/short.mp4` } },
      key,
    );
    expect(res.errors).toBeUndefined();
    expect(res.data.transcribe.credits).toEqual({ charged: 1, balance: 9 });
    expectReadableCues(readSrt(res.data.transcribe.srt), res.data.transcribe.segments);
    expect(res.data.transcribe.segments[0].words?.[0]).toEqual({ start: 0, end: expect.any(Number), text: 'Welcome', speaker: null });
    expect(res.data.transcribe.vtt).toMatch(/^WEBVTT\n\n00:00:00\.000 --> /);
  });

  it.each([
    ['media without sound', '/silent.mp4', 422, 'NO_MEDIA_FOUND'],
    ['a file that is not media', '/notmedia.mp3', 422, 'NO_MEDIA_FOUND'],
    ['a missing file', '/gone.mp3', 422, 'CONTENT_UNAVAILABLE'],
  ])('charges nothing for %s', async (_label, path, status, code) => {
    const { key, accountId } = await h.account({ credits: 3 });
    const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}${path}` }, key);
    expect(res.statusCode).toBe(status);
    expect(res.json<ErrorBody>().error.code).toBe(code);
    expect(await h.balance(accountId)).toEqual({ available: 3, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 3, held: 0 });
  });

  it('refuses media longer than the balance covers with 402, and holds nothing', async () => {
    const { key, accountId } = await h.account({ credits: 1 });
    const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3` }, key);
    expect(res.statusCode).toBe(402);
    expect(res.json<ErrorBody>().error).toMatchObject({ code: 'INSUFFICIENT_CREDITS', details: { required: 2, available: 1 } });
    expect(await h.balance(accountId)).toEqual({ available: 1, held: 0 });
  });

  it('splits audio longer than one upload, transcribes the pieces and stitches one time line', async () => {
    const chunked = await startFakeOpenAi();
    // 32 kbps mono MP3 is 4 kB a second: 100 kB is about 25 s, so 75 s needs four pieces.
    const h2 = await createHarness(
      {
        FETCH_ALLOW_HOSTS: site.hostPort,
        TRANSCRIBE_PROVIDERS: 'openai',
        OPENAI_BASE_URL: chunked.baseUrl,
        OPENAI_MAX_UPLOAD_BYTES: '100000',
      },
      undefined,
      { shareDatabaseOf: h },
    );
    try {
      const { key } = await h2.account({ credits: 5 });
      const res = await h2.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3` }, key);
      expect(res.statusCode).toBe(200);
      const body = transcriptionBody(res);
      expect(chunked.requests.length).toBeGreaterThanOrEqual(3);
      expect(chunked.requests.every((r) => r.fileBytes <= 100_000)).toBe(true);
      expect(body.durationSeconds).toBeGreaterThan(74);
      expect(body.durationSeconds).toBeLessThan(77);
      expect(body.credits.charged).toBe(2);
      // One time line: indexes run on, times never go back, and the last cue ends near the end.
      body.segments.forEach((s: { index: number; start: number; end: number }, i: number) => {
        expect(s.index).toBe(i + 1);
        if (i > 0) expect(s.start).toBeGreaterThanOrEqual(body.segments[i - 1].end - 0.001);
      });
      expect(body.segments.at(-1)?.end).toBeGreaterThan(70);
      const srt = readSrt(
        (await h2.request('GET', `/api/transcriptions/${body.id}.srt`, { headers: { authorization: `Bearer ${key}` } })).body,
      );
      // The fake times its words from each piece's own start, so at hard cuts (a tone has no pauses)
      // its words and segment texts disagree; the cues must still keep every rule.
      expectReadableCues(srt, body.segments, false);
      expect(srt.at(-1)!.end).toBeGreaterThan(70);
    } finally {
      await h2.close();
      await chunked.close();
    }
  });

  it('charges nothing and hides the upstream when the transcription server fails', async () => {
    const broken = await startFakeOpenAi({ apiKey: 'sk-other' });
    const h2 = await createHarness(
      {
        FETCH_ALLOW_HOSTS: site.hostPort,
        TRANSCRIBE_PROVIDERS: 'openai',
        OPENAI_BASE_URL: broken.baseUrl,
        OPENAI_API_KEY: 'sk-wrong-key-never-shown',
      },
      undefined,
      { shareDatabaseOf: h },
    );
    try {
      const { key, accountId } = await h2.account({ credits: 3 });
      const res = await h2.rest('/api/transcribe', { mediaUrl: `${site.origin}/short.mp4` }, key);
      expect(res.statusCode).toBe(502);
      expect(res.json<ErrorBody>().error.code).toBe('PROVIDER_ERROR');
      expect(res.body).not.toContain('sk-wrong-key-never-shown');
      expect(res.body).not.toMatch(/Incorrect API key/i);
      expect(await h2.balance(accountId)).toEqual({ available: 3, held: 0 });
    } finally {
      await h2.close();
      await broken.close();
    }
  });
});

describe('transcribe offline (local: ffmpeg + pocketsphinx)', () => {
  let h: Harness;
  let site: FakeSite;
  beforeAll(async () => {
    site = await startFakeSite();
    const dir = mkdtempSync(join(tmpdir(), 'speech-'));
    execFileSync('flite', ['-t', 'hello world', '-o', join(dir, 'hello.wav')]);
    site.file('/hello.wav', readFileSync(join(dir, 'hello.wav')), 'audio/wav');
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort, TRANSCRIBE_PROVIDERS: 'local' });
  });
  afterAll(async () => {
    await h.close();
    await site.close();
  });

  it('recognises real speech with timed segments and charges one minute', async () => {
    const { key, accountId } = await h.account({ credits: 3 });
    const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/hello.wav`, language: 'en' }, key);
    expect(res.statusCode).toBe(200);
    const body = transcriptionBody(res);
    expect(body).toMatchObject({ provider: 'local', language: 'en', credits: { charged: 1, balance: 2 } });
    expect(body.text).toMatch(/hello/);
    expect(body.segments.length).toBeGreaterThan(0);
    expect(body.segments[0].start).toBeGreaterThanOrEqual(0);
    expect(body.segments.at(-1)?.end).toBeLessThanOrEqual((body.durationSeconds ?? Number.NaN) + 0.5);
    expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
  });

  it('declines languages it does not know, and charges nothing', async () => {
    const { key, accountId } = await h.account({ credits: 3 });
    const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/hello.wav`, language: 'de' }, key);
    expect(res.statusCode).toBe(502);
    expect(res.json<ErrorBody>().error).toMatchObject({
      code: 'PROVIDER_ERROR',
      details: { attempts: [{ provider: 'local', outcome: 'failed' }] },
    });
    expect(await h.balance(accountId)).toEqual({ available: 3, held: 0 });
  });
});
