import SrtParser from 'srt-parser-2';
import webvtt from 'webvtt-parser';
import type { FakeSite } from '../fakes/site.fake.js';
import type { Harness } from './harness.js';
import { transcriptionWorld, type FakeOpenAi, type TranscriptionWorld } from './world.js';
import { lavfiMp3 } from './media.js';

/** Sound for 8 s, then 1.3 s of silence, again and again: speech with pauses between sentences. */
export function speechLike(seconds: number): Buffer {
  const tone = `aevalsrc='0.4*sin(2*PI*220*t)*sin(2*PI*3*t)*lt(mod(t\\,9.3)\\,8)':s=22050:d=${seconds}`;
  return lavfiMp3(tone, ['-ac', '1', '-b:a', '64k']);
}

/**
 * A recording of `seconds`, cut into pieces of at most about `pieceSeconds`, and its subtitles checked
 * cue by cue: half an hour in pieces of ten minutes (the default) in `npm run test:long`
 * (long-media.long.test.ts), three minutes in pieces of one in `npm test` (long-media.test.ts).
 */
export function describeRecordingSubtitles(seconds: number, pieceSeconds: number): void {
  describe(`a ${seconds / 60}-minute recording’s subtitles`, () => {
    let world: TranscriptionWorld;
    let h: Harness;
    let site: FakeSite;
    let openai: FakeOpenAi;
    beforeAll(
      async () => {
        world = await transcriptionWorld({
          media: [{ path: '/recording.mp3', bytes: speechLike(seconds) }],
          env: { OPENAI_PIECE_SECONDS: String(pieceSeconds) },
          queue: false,
        });
        ({ h, site, openai } = world);
      },
      Math.max(60_000, seconds * 100),
    ); // making the audio takes longer the longer it is
    afterAll(() => world?.close());

    it('keeps every SRT and WebVTT cue readable, cue by cue', async () => {
      const { key } = await h.account({ credits: 80 });
      const res = await h.rest('/api/transcribe?format=srt', { mediaUrl: `${site.origin}/recording.mp3` }, key);
      expect(res.statusCode).toBe(200);
      // Pieces of at most about pieceSeconds, shorter toward the end while the audio was still being written.
      expect(openai.requests.length).toBeGreaterThanOrEqual(3);
      for (const r of openai.requests) expect(r.fileBytes / 4000).toBeLessThanOrEqual(pieceSeconds * 1.1 + 1);
      const cues = new SrtParser().fromSrt(res.body);
      expect(cues.length).toBeGreaterThan(seconds / 6);
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
      expect(cues.at(-1)!.endSeconds).toBeGreaterThan(seconds - 10);
      const vtt = await h.rest('/api/transcribe?format=vtt', { mediaUrl: `${site.origin}/recording.mp3` }, key);
      expect(vtt.statusCode).toBe(200);
      const parsed = new webvtt.WebVTTParser().parse(vtt.body);
      expect(parsed.errors).toEqual([]);
      expect(parsed.cues.map((c) => [c.startTime, c.endTime])).toEqual(cues.map((c) => [c.startSeconds, c.endSeconds]));
    }, 60_000);
  });
}
