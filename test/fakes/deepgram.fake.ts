import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/** Deepgram's documented pre-recorded response, as stored in the fixture. */
export const listenFixture = JSON.parse(readFileSync(join(process.cwd(), 'test/fixtures/deepgram/listen.json'), 'utf8'));

/** A local stand-in for Deepgram's `POST /v1/listen` with a binary audio body and `Authorization: Token`. */
export async function startFakeDeepgram(opts: { apiKey: string }) {
  const requests: { query: Record<string, string>; contentType?: string; bytes: number; audio: Buffer }[] = [];
  const server = createServer(async (req, res) => {
    const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const url = new URL(req.url ?? '/', 'http://fake');
    if (req.method !== 'POST' || url.pathname !== '/v1/listen') return send(404, { err_code: 'NOT_FOUND', err_msg: 'not found' });
    if (req.headers.authorization !== `Token ${opts.apiKey}`) {
      return send(401, { err_code: 'INVALID_AUTH', err_msg: 'Invalid credentials.', request_id: 'x' });
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const audio = Buffer.concat(chunks);
    const bytes = audio.length;
    requests.push({ query: Object.fromEntries(url.searchParams), contentType: req.headers['content-type'], bytes, audio });
    if (!bytes) return send(400, { err_code: 'Bad Request', err_msg: 'Bad Request: failed to process audio: corrupt or unsupported data' });
    send(200, listenFixture);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}
