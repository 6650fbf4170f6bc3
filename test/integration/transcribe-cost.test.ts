import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeAssemblyAi } from '../fakes/assemblyai.fake.js';
import { startFakeDeepgram } from '../fakes/deepgram.fake.js';
import { startFakeOpenAi } from '../fakes/openai.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, type Harness } from '../support/harness.js';
import { mediaSeconds, restartingClocksTs } from '../support/media.js';
import type { ErrorBody } from '../support/bodies.js';

/**
 * Transcription is priced by the audio transcribed, the same for every provider: MPEG-TS segments
 * whose clocks restart, concatenated, claim the last segment's length (about 20 s, one credit) and
 * hold their sum (140 s, three started minutes). What each provider received is measured with
 * ffprobe at the provider, and must be what was charged and answered.
 */
const SEGMENTS = [60, 60, 20];
const HELD_SECONDS = 140;
const PRICE = 3;

const TRANSCRIBE = 'mutation($i: TranscribeInput!) { transcribe(input: $i) { id durationSeconds credits { charged balance } } }';

/** One provider under test: its settings, and the audio (bytes and file type) it has received so far. */
interface ProviderUnderTest {
  env: Record<string, string>;
  received(): { bytes: Buffer; ext: string }[];
}

const perStartedMinute = (seconds: number) => Math.max(1, Math.ceil(seconds / 60));

describe('transcription priced by the audio transcribed, not by what the container claims', () => {
  let site: FakeSite;
  let openai: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let deepgram: Awaited<ReturnType<typeof startFakeDeepgram>>;
  let assemblyai: Awaited<ReturnType<typeof startFakeAssemblyAi>>;
  let recorded: string;
  const providers: Record<string, ProviderUnderTest> = {};

  beforeAll(async () => {
    site = await startFakeSite();
    site.file('/restarts.ts', restartingClocksTs(SEGMENTS), 'video/mp2t');
    openai = await startFakeOpenAi({ apiKey: 'sk-cost' });
    deepgram = await startFakeDeepgram({ apiKey: 'dg-cost' });
    assemblyai = await startFakeAssemblyAi({ apiKey: 'aai-cost' });
    // The local recogniser is the real pocketsphinx; a wrapper keeps a copy of each file it is given.
    recorded = mkdtempSync(join(tmpdir(), 'mediagate-sphinx-heard-'));
    const wrapper = join(recorded, 'pocketsphinx.sh');
    writeFileSync(wrapper, `#!/bin/sh\ncp "$2" "${recorded}/heard-$$.wav"\nexec pocketsphinx_continuous "$@"\n`);
    chmodSync(wrapper, 0o755);
    providers.openai = {
      env: { TRANSCRIBE_PROVIDERS: 'openai', OPENAI_BASE_URL: openai.baseUrl, OPENAI_API_KEY: 'sk-cost' },
      received: () => openai.requests.map((r) => ({ bytes: r.audio, ext: 'mp3' })),
    };
    providers.deepgram = {
      env: { TRANSCRIBE_PROVIDERS: 'deepgram', DEEPGRAM_API_KEY: 'dg-cost', DEEPGRAM_BASE_URL: deepgram.baseUrl },
      received: () => deepgram.requests.map((r) => ({ bytes: r.audio, ext: 'mp3' })),
    };
    providers.assemblyai = {
      env: {
        TRANSCRIBE_PROVIDERS: 'assemblyai',
        ASSEMBLYAI_API_KEY: 'aai-cost',
        ASSEMBLYAI_BASE_URL: assemblyai.baseUrl,
        ASSEMBLYAI_POLL_SECONDS: '0.05',
      },
      received: () => assemblyai.audio.map((bytes) => ({ bytes, ext: 'mp3' })),
    };
    providers.local = {
      env: { TRANSCRIBE_PROVIDERS: 'local', POCKETSPHINX_PATH: wrapper },
      received: () =>
        readdirSync(recorded)
          .filter((f) => f.endsWith('.wav'))
          .sort()
          .map((f) => ({ bytes: readFileSync(join(recorded, f)), ext: 'wav' })),
    };
  });
  afterAll(async () => {
    await site.close();
    await openai.close();
    await deepgram.close();
    await assemblyai.close();
    rmSync(recorded, { recursive: true, force: true });
  });

  it('serves media whose container claims a fraction of what it holds (the review’s case)', () => {
    const claimed = mediaSeconds(restartingClocksTs(SEGMENTS), 'ts');
    expect(claimed).toBeLessThan(25);
    expect(perStartedMinute(claimed)).toBe(1);
  });

  describe.each(['openai', 'deepgram', 'assemblyai', 'local'])('through %s', (name) => {
    let h: Harness;
    beforeAll(async () => {
      h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort, ...providers[name].env });
    });
    afterAll(() => h.close());

    /** The audio the provider received since `before` uploads: one file, and its length by ffprobe. */
    const receivedSince = (before: number) => {
      const files = providers[name].received().slice(before);
      expect(files).toHaveLength(1);
      return mediaSeconds(files[0].bytes, files[0].ext);
    };

    const expectPricedBySent = (durationSeconds: number, charged: number, sentSeconds: number) => {
      expect(durationSeconds).toBeGreaterThan(HELD_SECONDS - 0.5);
      expect(durationSeconds).toBeLessThan(HELD_SECONDS + 0.5);
      // The codec's own framing (an MP3 frame is 36 ms here) is all that may differ.
      expect(Math.abs(sentSeconds - durationSeconds)).toBeLessThan(0.2);
      expect(charged).toBe(PRICE);
      expect(perStartedMinute(sentSeconds)).toBe(charged);
    };

    it('charges REST callers for the audio sent, and answers its length', async () => {
      const { key, accountId } = await h.account({ credits: 10 });
      const before = providers[name].received().length;
      const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/restarts.ts` }, key);
      expect(res.statusCode).toBe(200);
      const body = res.json<{ durationSeconds: number; credits: { charged: number; balance: number } }>();
      expectPricedBySent(body.durationSeconds, body.credits.charged, receivedSince(before));
      expect(body.credits.balance).toBe(10 - PRICE);
      expect(await h.balance(accountId)).toEqual({ available: 10 - PRICE, held: 0 });
      expect(await h.ledgerSums(accountId)).toEqual({ available: 10 - PRICE, held: 0 });
    });

    it('charges GraphQL callers alike', async () => {
      const { key, accountId } = await h.account({ credits: 10 });
      const before = providers[name].received().length;
      const res = await h.gql<{ transcribe: { durationSeconds: number; credits: { charged: number } } }>(
        TRANSCRIBE,
        { i: { mediaUrl: `${site.origin}/restarts.ts` } },
        key,
      );
      expect(res.errors).toBeUndefined();
      const { durationSeconds, credits } = res.data.transcribe;
      expectPricedBySent(durationSeconds, credits.charged, receivedSince(before));
      expect(await h.balance(accountId)).toEqual({ available: 10 - PRICE, held: 0 });
    });

    it('refuses an account that can pay for the claim but not for the audio with 402: nothing charged, the provider never called', async () => {
      const { key, accountId } = await h.account({ credits: PRICE - 1 });
      const before = providers[name].received().length;
      const rest = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/restarts.ts` }, key);
      expect(rest.statusCode).toBe(402);
      expect(rest.json<ErrorBody>().error).toMatchObject({ code: 'INSUFFICIENT_CREDITS', details: { available: PRICE - 1 } });
      const gql = await h.gql(TRANSCRIBE, { i: { mediaUrl: `${site.origin}/restarts.ts` } }, key);
      expect(gql.errors?.[0].extensions.code).toBe('INSUFFICIENT_CREDITS');
      expect(providers[name].received()).toHaveLength(before);
      expect(await h.balance(accountId)).toEqual({ available: PRICE - 1, held: 0 });
      expect(await h.ledgerSums(accountId)).toEqual({ available: PRICE - 1, held: 0 });
      const jobs = await h.sql<{ status: string; error_code: string }>('select status, error_code from job where account_id = ?', [
        accountId,
      ]);
      expect(jobs).toEqual([
        { status: 'FAILED', error_code: 'INSUFFICIENT_CREDITS' },
        { status: 'FAILED', error_code: 'INSUFFICIENT_CREDITS' },
      ]);
    });
  });
});
