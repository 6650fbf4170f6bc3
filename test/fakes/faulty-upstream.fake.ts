import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** How an upstream misbehaves. */
export type Fault = 'reset' | 'invalid-json' | 'trickle';

/** What an invalid-JSON answer says: a cut-off body that names nothing a caller may see. */
export const INVALID_JSON_BODY = '{"status": "tunnel", "url": "http://upstream.invalid/secret-upstream-text';

/**
 * Misbehaves on one request the way a broken upstream does: `reset` drops the connection with a TCP
 * RST before answering; `invalid-json` answers 200 with a JSON content type and a cut-off body;
 * `trickle` answers 200 and then sends one byte every `trickleMs` for as long as the client listens,
 * so no idle timeout ever fires and only a whole-request deadline ends it. Returns a stop function
 * for the trickle.
 */
export function misbehave(
  fault: Fault,
  req: IncomingMessage,
  res: ServerResponse,
  opts: { contentType?: string; trickleMs?: number } = {},
): () => void {
  const contentType = opts.contentType ?? 'application/json';
  switch (fault) {
    case 'reset':
      req.socket.resetAndDestroy();
      return () => {};
    case 'invalid-json':
      req.resume();
      res.writeHead(200, { 'content-type': contentType }).end(INVALID_JSON_BODY);
      return () => {};
    case 'trickle': {
      req.resume();
      res.writeHead(200, { 'content-type': contentType });
      const text = contentType.includes('html') ? `<html><head><title>${'slow '.repeat(10_000)}` : `{"text": "${'slow '.repeat(10_000)}`;
      let i = 0;
      const timer = setInterval(() => {
        if (res.destroyed || i >= text.length) return clearInterval(timer);
        res.write(text[i++]);
      }, opts.trickleMs ?? 100);
      res.on('close', () => clearInterval(timer));
      return () => {
        clearInterval(timer);
        res.destroy();
      };
    }
  }
}

/**
 * A stand-in for any JSON API upstream (cobalt, an OpenAI-compatible server, Deepgram, AssemblyAI)
 * that answers every request with the current `fault`. It counts requests, so a test can prove the
 * upstream was reached.
 */
export async function startFaultyUpstream(opts: { trickleMs?: number } = {}) {
  const stops = new Set<() => void>();
  const state = { fault: 'reset' as Fault, requests: 0 };
  const server = createServer((req, res) => {
    state.requests += 1;
    const stop = misbehave(state.fault, req, res, { trickleMs: opts.trickleMs });
    stops.add(stop);
    res.on('close', () => stops.delete(stop));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    hostPort: `127.0.0.1:${port}`,
    state,
    close: () =>
      new Promise<void>((r) => {
        for (const stop of stops) stop();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
