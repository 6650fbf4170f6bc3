import { createHarness } from '../support/harness.js';
import { startFakeAssemblyAi } from '../fakes/assemblyai.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { makeMedia } from '../support/media.js';
import { transcriptionBody, type TranscriptionBody } from '../support/bodies.js';

describe('transcribe through AssemblyAI', () => {
  let site: FakeSite;
  beforeAll(async () => {
    site = await startFakeSite();
    site.file('/talk.mp3', makeMedia({ seconds: 6 }), 'audio/mpeg');
  });
  afterAll(() => site.close());

  const run = async (speakerLabels: boolean, language?: string) => {
    const fake = await startFakeAssemblyAi({ apiKey: 'aai-secret', speakerLabels });
    const h = await createHarness({
      FETCH_ALLOW_HOSTS: site.hostPort,
      TRANSCRIBE_PROVIDERS: 'assemblyai',
      ASSEMBLYAI_API_KEY: 'aai-secret',
      ASSEMBLYAI_BASE_URL: fake.baseUrl,
      ASSEMBLYAI_POLL_SECONDS: '0.02',
    });
    try {
      const { key } = await h.account({ credits: 5 });
      const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3`, ...(language ? { language } : {}) }, key);
      return { res, fake };
    } finally {
      await h.close();
      await fake.close();
    }
  };

  it('uploads the audio, polls the transcript, and maps utterances with speakers', async () => {
    const { res, fake } = await run(true, 'en');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      provider: 'assemblyai',
      language: 'en',
      durationSeconds: 6,
      text: 'Good morning. Welcome back to the studio.',
      segments: [
        { index: 1, start: 0.32, end: 1.12, text: 'Good morning.', speaker: 'speaker_A' },
        { index: 2, start: 3.1, end: 4.6, text: 'Welcome back to the studio.', speaker: 'speaker_B' },
      ],
    });
    // Word times come in milliseconds and go out in seconds, with the speaker.
    expect(res.json<TranscriptionBody>().segments[0].words).toEqual([
      { start: 0.32, end: 0.64, text: 'Good', speaker: 'speaker_A' },
      { start: 0.64, end: 1.12, text: 'morning.', speaker: 'speaker_A' },
    ]);
    const [only] = [...fake.transcripts.values()];
    expect(only.body).toMatchObject({ speaker_labels: true, language_code: 'en' });
    expect(String(only.body.audio_url)).toContain('/upload/');
    expect([...fake.uploads.values()][0]).toBeGreaterThan(1000);
  });

  it('reads the sentences endpoint when there are no utterances, and detects the language otherwise', async () => {
    const { res, fake } = await run(false);
    expect(transcriptionBody(res).segments.map((s) => [s.start, s.end, s.text, s.speaker])).toEqual([
      [0.32, 1.12, 'Good morning.', null],
      [3.1, 4.6, 'Welcome back to the studio.', null],
    ]);
    expect([...fake.transcripts.values()][0].body).toMatchObject({ language_detection: true });
  });
});
