import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the fake cobalt was asked. */
export interface CobaltCall {
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

/**
 * A local cobalt instance speaking api v10 (`POST /`, JSON in and out, errors as 400 with
 * `{status: "error", error: {code}}`). The answer depends on the path of the URL asked for:
 * /tunnel, /redirect, /picker, /private, /down (500), anything else error.api.link.unsupported.
 */
export async function startFakeCobalt(opts: { apiKey?: string } = {}) {
  const calls: CobaltCall[] = [];
  const server = createServer(async (req, res) => {
    const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method !== 'POST' || req.url !== '/') return send(404, { status: 'error', error: { code: 'error.api.generic' } });
    if (req.headers.accept !== 'application/json' || !String(req.headers['content-type']).startsWith('application/json')) {
      return send(400, { status: 'error', error: { code: 'error.api.header.accept' } });
    }
    if (opts.apiKey && req.headers.authorization !== `Api-Key ${opts.apiKey}`)
      return send(401, { status: 'error', error: { code: 'error.api.auth.key.invalid' } });
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>;
    calls.push({ body, headers: req.headers });
    const path = new URL(String(body.url)).pathname;
    const exp = 1_900_000_000_000;
    if (path === '/tunnel') {
      const audio = body.downloadMode === 'audio';
      return send(200, {
        status: 'tunnel',
        url: `http://cobalt.example/tunnel?id=abc&exp=${exp}&sig=x`,
        filename: audio ? 'youtube_dQw4w9WgXcQ_audio.mp3' : `youtube_dQw4w9WgXcQ_1280x720_h264.mp4`,
      });
    }
    if (path === '/redirect')
      return send(200, { status: 'redirect', url: 'https://cdn.example/v/clip.mp4', filename: 'twitter_123_1920x1080.mp4' });
    if (path === '/picker') {
      return send(200, {
        status: 'picker',
        audio: 'https://cdn.example/slideshow.mp3',
        audioFilename: 'tiktok_1_audio.mp3',
        picker: [
          { type: 'photo', url: 'https://cdn.example/p1.jpg', thumb: 'https://cdn.example/p1-thumb.jpg' },
          { type: 'photo', url: 'https://cdn.example/p2.jpg' },
        ],
      });
    }
    if (path === '/private')
      return send(400, { status: 'error', error: { code: 'error.api.content.video.private', context: { service: 'youtube' } } });
    if (path === '/down') return send(500, { status: 'error', error: { code: 'error.api.fetch.critical' } });
    return send(400, { status: 'error', error: { code: 'error.api.link.unsupported' } });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}
