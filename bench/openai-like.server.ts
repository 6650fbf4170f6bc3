import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The prepared audio is 32 kbit/s MP3: 4000 bytes per second of sound. */
const BYTES_PER_SECOND = 4000;

/**
 * An OpenAI-compatible `POST /v1/audio/transcriptions` for the bench that works like a real server:
 * it reads the whole upload, takes `msPerAudioSecond` for every second of audio it got (a fast
 * hosted Whisper does about 200× real time, 5 ms a second), and answers verbose_json with segments
 * and words covering that audio.
 */
export async function startOpenAiLikeServer(
  msPerAudioSecond: number,
): Promise<{ baseUrl: string; uploads: number[]; close(): Promise<void> }> {
  const uploads: number[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const form = await new Request('http://bench.invalid/', {
      method: 'POST',
      headers: { 'content-type': req.headers['content-type'] ?? '' },
      body: Buffer.concat(chunks),
    }).formData();
    const file = form.get('file');
    const bytes = file && typeof file !== 'string' ? file.size : 0;
    const seconds = bytes / BYTES_PER_SECOND;
    uploads.push(seconds);
    await new Promise((r) => setTimeout(r, seconds * msPerAudioSecond));
    const segments = [];
    const words = [];
    for (let start = 0; start < seconds; start += 5) {
      const end = Math.min(seconds, start + 5);
      segments.push({ id: segments.length, start, end, text: ' A sentence of speech that lasts five seconds.' });
      for (let w = 0; w < 8; w++)
        words.push({ word: 'word', start: start + (w * (end - start)) / 8, end: start + ((w + 0.8) * (end - start)) / 8 });
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        task: 'transcribe',
        language: 'english',
        duration: seconds,
        text: segments.map((s) => s.text).join(''),
        segments,
        words,
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    uploads,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
