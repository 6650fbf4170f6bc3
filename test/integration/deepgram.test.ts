import type { Harness } from '../support/harness.js';
import type { FakeSite } from '../fakes/site.fake.js';
import { transcriptionWorld, type FakeDeepgram, type TranscriptionWorld } from '../support/world.js';
import type { TranscriptionBody } from '../support/bodies.js';

describe('transcribe through Deepgram, with failover', () => {
  let world: TranscriptionWorld;
  let site: FakeSite;
  let deepgram: FakeDeepgram;
  beforeAll(async () => {
    world = await transcriptionWorld({ deepgram: { apiKey: 'dg-secret' }, media: [{ path: '/talk.mp3', seconds: 6 }], gateway: false });
    site = world.site;
    deepgram = world.deepgram!;
  });
  afterAll(() => world?.close());

  /** A gateway trying Deepgram (with this key), then OpenAI. */
  const harness = (deepgramKey: string) =>
    world.gateway({ providers: ['deepgram', 'openai'], env: { DEEPGRAM_API_KEY: deepgramKey }, queue: false });

  it('uploads the prepared audio (never the caller’s URL) and maps utterances with speakers', async () => {
    const h: Harness = await harness('dg-secret');
    try {
      const { key } = await h.account({ credits: 5 });
      const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3`, language: 'en' }, key);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        provider: 'deepgram',
        language: 'en',
        // The length sent and charged, not Deepgram's own figure (6.2 in its fixture).
        durationSeconds: expect.closeTo(6, 1),
        text: 'Good morning. Welcome back to the studio.',
        segments: [
          { index: 1, start: 0.32, end: 1.12, text: 'Good morning.', speaker: 'speaker_0' },
          { index: 2, start: 3.1, end: 4.6, text: 'Welcome back to the studio.', speaker: 'speaker_1' },
        ],
        credits: { charged: 1 },
      });
      // Deepgram's words keep their punctuated spelling and speaker; the WebVTT names each speaker's cue.
      expect(res.json<TranscriptionBody>().segments[1].words?.[4]).toEqual({ start: 4, end: 4.6, text: 'studio.', speaker: 'speaker_1' });
      const vtt = await h.request('GET', `/api/transcriptions/${res.json<{ id: string }>().id}.vtt`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(vtt.body).toBe(
        'WEBVTT\n\n00:00:00.320 --> 00:00:01.153\n<v speaker_0>Good morning.\n\n00:00:03.100 --> 00:00:04.600\n<v speaker_1>Welcome back to the studio.\n\n',
      );
      const sent = deepgram.requests.at(-1)!;
      expect(sent).toMatchObject({
        contentType: 'audio/mpeg',
        query: { model: 'nova-3', language: 'en', utterances: 'true', diarize: 'true' },
      });
      expect(sent.bytes).toBeGreaterThan(1000);
      expect(JSON.stringify(sent.query)).not.toContain(site.origin);
    } finally {
      await h.close();
    }
  });

  it('fails over to the next provider when Deepgram refuses the key, and says nothing of it', async () => {
    const h = await harness('dg-wrong-key');
    try {
      const { key } = await h.account({ credits: 5 });
      const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3` }, key);
      expect(res.statusCode).toBe(200);
      expect(res.json<TranscriptionBody>().provider).toBe('openai');
      expect(res.body).not.toContain('dg-wrong-key');
    } finally {
      await h.close();
    }
  });
});
