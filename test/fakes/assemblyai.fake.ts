import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local AssemblyAI: `POST /v2/upload` (raw bytes → upload_url), `POST /v2/transcript`
 * (→ queued), `GET /v2/transcript/{id}` (processing once, then completed or error),
 * `GET /v2/transcript/{id}/sentences`. Keys go in the bare `authorization` header.
 */
export async function startFakeAssemblyAi(opts: { apiKey: string; speakerLabels?: boolean }) {
  const uploads = new Map<string, number>();
  /** Every uploaded file, in order. */
  const audio: Buffer[] = [];
  const transcripts = new Map<string, { body: Record<string, unknown>; polls: number }>();
  const server = createServer(async (req, res) => {
    const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.headers.authorization !== opts.apiKey) return send(401, { error: 'Authentication error, API token missing/invalid' });
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://fake');
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.method === 'POST' && url.pathname === '/v2/upload') {
      const id = randomUUID();
      uploads.set(id, raw.length);
      audio.push(raw);
      return send(200, { upload_url: `${origin}/upload/${id}` });
    }
    if (req.method === 'POST' && url.pathname === '/v2/transcript') {
      const body = JSON.parse(raw.toString()) as Record<string, unknown>;
      const id = randomUUID();
      transcripts.set(id, { body, polls: 0 });
      return send(200, { id, status: 'queued', audio_url: body.audio_url, text: null, words: null, utterances: null });
    }
    const m = /^\/v2\/transcript\/([^/]+)(\/sentences)?$/.exec(url.pathname);
    const t = m && transcripts.get(m[1]);
    if (req.method === 'GET' && t) {
      if (m![2]) {
        return send(200, {
          id: m![1],
          confidence: 0.93,
          audio_duration: 6,
          sentences: [
            { text: 'Good morning.', start: 320, end: 1120, confidence: 0.95, words: [], speaker: null },
            { text: 'Welcome back to the studio.', start: 3100, end: 4600, confidence: 0.92, words: [], speaker: null },
          ],
        });
      }
      const uploadId = String(t.body.audio_url).split('/').pop()!;
      if (!uploads.get(uploadId))
        return send(200, { id: m![1], status: 'error', error: 'Transcoding failed. File does not appear to contain audio.' });
      if (t.polls++ === 0) return send(200, { id: m![1], status: 'processing', text: null, utterances: null });
      return send(200, {
        id: m![1],
        status: 'completed',
        language_code: (t.body.language_code as string) ?? 'en_us',
        audio_duration: 6,
        text: 'Good morning. Welcome back to the studio.',
        utterances:
          opts.speakerLabels === false
            ? null
            : [
                {
                  speaker: 'A',
                  text: 'Good morning.',
                  start: 320,
                  end: 1120,
                  confidence: 0.95,
                  words: [
                    { text: 'Good', start: 320, end: 640, confidence: 0.96, speaker: 'A' },
                    { text: 'morning.', start: 640, end: 1120, confidence: 0.94, speaker: 'A' },
                  ],
                },
                {
                  speaker: 'B',
                  text: 'Welcome back to the studio.',
                  start: 3100,
                  end: 4600,
                  confidence: 0.92,
                  words: [
                    { text: 'Welcome', start: 3100, end: 3500, confidence: 0.93, speaker: 'B' },
                    { text: 'back', start: 3500, end: 3800, confidence: 0.95, speaker: 'B' },
                    { text: 'to', start: 3800, end: 3900, confidence: 0.97, speaker: 'B' },
                    { text: 'the', start: 3900, end: 4000, confidence: 0.97, speaker: 'B' },
                    { text: 'studio.', start: 4000, end: 4600, confidence: 0.9, speaker: 'B' },
                  ],
                },
              ],
      });
    }
    send(404, { error: 'Not found' });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    transcripts,
    uploads,
    audio,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}
