import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProviderError } from '../../../src/errors.js';
import { OpenAiTranscriptionProvider } from '../../../src/providers/transcription/openai.adapter.js';
import { whisperLanguageCode } from '../../../src/providers/transcription/whisper-languages.js';
import type { TranscriptionRequest } from '../../../src/providers/transcription/transcription.types.js';
import { startFakeOpenAi, verboseJsonFixture, type FakeOpenAiResponse } from '../../fakes/openai.fake.js';

const KEY = 'sk-proj-unit-test-secret-4f9a';
const dir = mkdtempSync(join(tmpdir(), 'mediagate-openai-test-'));
const audioPath = join(dir, 'audio.mp3');
// 30,000 bytes of "32 kbit/s MP3": the fake reads that as 7.5 s of audio.
writeFileSync(audioPath, Buffer.alloc(30_000, 7));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const request = (over: Partial<TranscriptionRequest> = {}): TranscriptionRequest => ({
  audioPath,
  mediaUrl: 'https://cdn.example.com/talk.mp3',
  language: null,
  durationSeconds: 7.5,
  signal: new AbortController().signal,
  ...over,
});

/** The rejection of `p`, which must be a ProviderError. */
async function providerError(p: Promise<unknown>): Promise<ProviderError> {
  const err = await p.then(
    () => new Error('expected a rejection'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  expect((err as ProviderError).provider).toBe('openai');
  return err as ProviderError;
}

let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;
let answer: ((fields: Record<string, string>) => FakeOpenAiResponse | undefined) | undefined;
beforeAll(async () => {
  fake = await startFakeOpenAi({ apiKey: KEY, respond: (r) => answer?.(r.fields) });
});
beforeEach(() => {
  answer = undefined;
  fake.requests.length = 0;
});
afterAll(() => fake.close());

const provider = (over: Partial<ConstructorParameters<typeof OpenAiTranscriptionProvider>[0]> = {}) =>
  new OpenAiTranscriptionProvider({ baseUrl: fake.baseUrl, apiKey: KEY, model: 'whisper-1', timeoutMs: 5000, ...over });

describe('OpenAiTranscriptionProvider', () => {
  it('sends the documented multipart fields with the key and maps the verbose_json fixture', async () => {
    answer = () => ({ status: 200, body: verboseJsonFixture });
    const result = await provider().transcribe(request({ language: 'en' }));
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({
      fields: { model: 'whisper-1', response_format: 'verbose_json', language: 'en' },
      granularities: ['segment', 'word'],
      fileName: 'audio.mp3',
      fileBytes: 30_000,
      authorization: `Bearer ${KEY}`,
    });
    expect(fake.requests[0].headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(result).toEqual({
      language: 'en',
      durationSeconds: 7.5,
      text: 'Welcome to the show. Today we talk about sound. Thanks for listening.',
      segments: [
        { index: 1, start: 0, end: 2.48, text: 'Welcome to the show.', speaker: null },
        { index: 2, start: 2.48, end: 5.12, text: 'Today we talk about sound.', speaker: null },
        { index: 3, start: 5.12, end: 7.5, text: 'Thanks for listening.', speaker: null },
      ],
    });
  });

  it("works against the fake's default answer: segments cover the upload, language name → code", async () => {
    const result = await provider({ model: 'whisper-large-v3' }).transcribe(request());
    expect(fake.requests[0].fields).toEqual({
      model: 'whisper-large-v3',
      response_format: 'verbose_json',
      'timestamp_granularities[]': 'word',
    });
    expect(fake.requests[0].granularities).toEqual(['segment', 'word']);
    expect(result.language).toBe('en');
    expect(result.durationSeconds).toBe(7.5);
    expect(result.segments.map((s) => [s.index, s.start, s.end])).toEqual([
      [1, 0, 2.5],
      [2, 2.5, 5],
      [3, 5, 7.5],
    ]);
    // The words OpenAI lists at the top level go to the segment they fall in.
    expect(result.segments.map((s) => s.words?.map((w) => w.text).join(' '))).toEqual([
      'Welcome to the show',
      'Today we talk about sound',
      'It travels as a wave',
    ]);
    expect(result.segments[1].words?.[0]).toEqual({ start: 2.5, end: expect.any(Number), text: 'Today' });
    expect(result.text).toBe('Welcome to the show. Today we talk about sound. It travels as a wave.');
  });

  it('rounds times to milliseconds and trims text', async () => {
    answer = () => ({
      status: 200,
      body: {
        language: 'german',
        duration: 3.14259,
        text: '  Hallo Welt.  ',
        segments: [{ id: 0, start: 0.12345, end: 3.14259, text: '  Hallo Welt.  ' }],
      },
    });
    expect(await provider().transcribe(request())).toEqual({
      language: 'de',
      durationSeconds: 3.143,
      text: 'Hallo Welt.',
      segments: [{ index: 1, start: 0.123, end: 3.143, text: 'Hallo Welt.', speaker: null }],
    });
  });

  it('accepts servers that answer with an ISO code, no duration and no segments', async () => {
    answer = () => ({ status: 200, body: { text: ' Bonjour à tous. ', language: 'fr' } });
    expect(await provider().transcribe(request({ durationSeconds: 4.2 }))).toEqual({
      language: 'fr',
      durationSeconds: 4.2,
      text: 'Bonjour à tous.',
      // One cue over the whole audio, so subtitles are not empty.
      segments: [{ index: 1, start: 0, end: 4.2, text: 'Bonjour à tous.', speaker: null }],
    });
  });

  it('takes the duration from the last segment when the server leaves it out', async () => {
    answer = () => ({
      status: 200,
      body: {
        text: 'a b',
        language: 'en',
        segments: [
          { start: 0, end: 1.5, text: 'a' },
          { start: 1.5, end: 3.25, text: 'b' },
        ],
      },
    });
    expect((await provider().transcribe(request({ durationSeconds: 99 }))).durationSeconds).toBe(3.25);
  });

  it('falls back to the requested language when the reported one is unknown or missing', async () => {
    answer = () => ({ status: 200, body: { text: 'x', language: 'klingon', segments: [] } });
    expect((await provider().transcribe(request({ language: 'de' }))).language).toBe('de');
    expect((await provider().transcribe(request())).language).toBeNull();
    answer = () => ({ status: 200, body: { text: 'x' } });
    expect((await provider().transcribe(request({ language: 'it' }))).language).toBe('it');
  });

  it('maps Whisper language names and codes to ISO-639-1', () => {
    const names: Record<string, string> = {
      english: 'en',
      German: 'de',
      chinese: 'zh',
      spanish: 'es',
      french: 'fr',
      japanese: 'ja',
      portuguese: 'pt',
      russian: 'ru',
      korean: 'ko',
      arabic: 'ar',
      hindi: 'hi',
      turkish: 'tr',
      dutch: 'nl',
      ukrainian: 'uk',
      hebrew: 'he',
      persian: 'fa',
      welsh: 'cy',
      'haitian creole': 'ht',
      javanese: 'jv',
      cantonese: 'zh',
    };
    for (const [name, code] of Object.entries(names)) expect([name, whisperLanguageCode(name)]).toEqual([name, code]);
    expect(['en', 'EN', 'pt-BR', 'zh_Hans', 'jw', 'yue'].map(whisperLanguageCode)).toEqual(['en', 'en', 'pt', 'zh', 'jv', 'zh']);
    expect([undefined, null, 42, '', 'klingon', 'haw', 'toString', 'constructor'].map(whisperLanguageCode)).toEqual(Array(8).fill(null));
  });

  it('turns a rejected key into a failure that carries neither the key nor the upstream text', async () => {
    const err = await providerError(provider({ apiKey: 'sk-wrong-secret-value-1234' }).transcribe(request()));
    expect(err.kind).toBe('failed');
    expect(err.message).toBe('upstream rejected the credentials (401)');
    expect(err.message).not.toContain('sk-wrong');
    expect(JSON.stringify(err)).not.toContain('sk-wrong');
    expect(err.message).not.toMatch(/Incorrect API key/);
  });

  it('sends no Authorization header when no key is configured', async () => {
    const open = await startFakeOpenAi();
    try {
      const result = await new OpenAiTranscriptionProvider({ baseUrl: `${open.baseUrl}/`, model: 'whisper-1', timeoutMs: 5000 }).transcribe(
        request(),
      );
      expect(open.requests[0].authorization).toBeUndefined();
      expect(result.segments.length).toBe(3);
    } finally {
      await open.close();
    }
  });

  it.each([403, 408, 429, 500, 502, 503])('fails on HTTP %i without passing the body on', async (status) => {
    answer = () => ({ status, body: { error: { message: 'internal detail: shard 7 exploded', type: 'server_error' } } });
    const err = await providerError(provider().transcribe(request()));
    expect(err.kind).toBe('failed');
    expect(err.message).toContain(String(status));
    expect(err.message).not.toContain('shard 7');
  });

  it('calls a 413 from the server too large', async () => {
    answer = () => ({ status: 413, body: { error: { message: 'Maximum content size limit exceeded' } } });
    expect((await providerError(provider().transcribe(request()))).kind).toBe('too_large');
  });

  it.each([
    ['malformed JSON', { status: 200, body: '{"text": "cut off', raw: true }],
    ['HTML', { status: 200, body: '<html>proxy error</html>', raw: true }],
    ['a JSON array', { status: 200, body: [1, 2] }],
    ['neither text nor segments', { status: 200, body: { task: 'transcribe' } }],
  ] as [string, FakeOpenAiResponse][])('fails on %s', async (_label, response) => {
    answer = () => response;
    const err = await providerError(provider().transcribe(request()));
    expect(err.kind).toBe('failed');
  });

  it('times out on a slow server', async () => {
    answer = () => ({ status: 200, body: verboseJsonFixture, delayMs: 2000 });
    const started = Date.now();
    const err = await providerError(provider({ timeoutMs: 200 }).transcribe(request()));
    expect(err.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it("rethrows the caller's abort reason instead of a provider failure", async () => {
    const controller = new AbortController();
    const reason = new Error('job canceled');
    // The caller gives up once the upload has reached the server, which is slow to answer.
    answer = () => (controller.abort(reason), { status: 200, body: verboseJsonFixture, delayMs: 2000 });
    await expect(provider().transcribe(request({ signal: controller.signal }))).rejects.toBe(reason);
  });

  it('fails when the server cannot be reached', async () => {
    const gone = await startFakeOpenAi();
    await gone.close();
    expect((await providerError(provider({ baseUrl: gone.baseUrl }).transcribe(request()))).kind).toBe('failed');
  });

  it('refuses audio over the upload limit without any request reaching the server', async () => {
    const err = await providerError(provider({ maxUploadBytes: 29_999 }).transcribe(request()));
    expect(err.kind).toBe('too_large');
    expect(fake.requests).toHaveLength(0);
    // Exactly at the limit is still allowed.
    await provider({ maxUploadBytes: 30_000 }).transcribe(request());
    expect(fake.requests).toHaveLength(1);
  });

  it('uses OpenAI defaults for the base URL, model and upload limit', async () => {
    const big = join(dir, 'big.mp3');
    writeFileSync(big, Buffer.alloc(25 * 1024 * 1024 + 1));
    // Over 25 MiB is refused before any connection, so the real OpenAI URL is never contacted.
    const err = await providerError(new OpenAiTranscriptionProvider({ timeoutMs: 1000 }).transcribe(request({ audioPath: big })));
    expect(err.kind).toBe('too_large');
    await provider({ model: undefined }).transcribe(request());
    expect(fake.requests[0].fields.model).toBe('whisper-1');
  });
});
