import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The one page fetch every contender makes, spelled as the gateway's guarded client and builtin
 * provider spell it (same user agent and accept header), so the references fetch exactly what the
 * gateway fetches.
 */
export const PAGE_REQUEST_HEADERS = {
  'user-agent': 'mediagate/0.1 (+https://github.com/mediagate)',
  accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
} as const;

/** Undici pool size per origin, as the gateway's guarded client sets it. */
export const PAGE_CONNECTIONS = 64;

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A bench child tells its parent where it listens, and leaves when the parent goes or asks. */
export function announce(port: number): void {
  process.send?.({ port });
  process.on('disconnect', () => process.exit(0));
  // An orderly exit, so that a --cpu-prof child writes its profile.
  process.on('SIGTERM', () => process.exit(0));
}
