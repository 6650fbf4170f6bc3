import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST a receiver saw. */
export interface Delivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** How a receiver answers one delivery: a status, 'hang' (never answers) or 'cut' (closes the connection without a word). */
export type ReceiverAnswer = number | 'hang' | 'cut';

/** A webhook receiver on loopback that records every POST. */
export interface FakeWebhookReceiver {
  origin: string;
  hostPort: string;
  deliveries: Delivery[];
  /** The answers of `path` from now on, in order; the last one repeats (200 unless scripted). */
  script(path: string, answers: ReceiverAnswer[]): void;
  /** The deliveries to `path`, in order. */
  at(path: string): Delivery[];
  close(): Promise<void>;
}

export async function startFakeWebhookReceiver(): Promise<FakeWebhookReceiver> {
  const deliveries: Delivery[] = [];
  const scripts = new Map<string, ReceiverAnswer[]>();
  const hanging: Array<() => void> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const path = req.url ?? '/';
      deliveries.push({ path, headers: req.headers, body });
      const script = scripts.get(path) ?? [200];
      const next = script.length > 1 ? script.shift()! : script[0];
      if (next === 'hang') return void hanging.push(() => res.destroy());
      if (next === 'cut') return void req.socket.destroy();
      res.writeHead(next, { 'content-type': 'text/plain' }).end(next >= 400 ? 'receiver-internal-text' : 'ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    hostPort: `127.0.0.1:${port}`,
    deliveries,
    script: (path, answers) => void scripts.set(path, answers),
    at: (path) => deliveries.filter((d) => d.path === path),
    close: () =>
      new Promise<void>((r) => {
        hanging.forEach((end) => end());
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * The Standard Webhooks reference verification, written out: HMAC-SHA256 with the base64-decoded
 * secret over `${id}.${timestamp}.${body}`, compared in constant time with each `v1,` signature; a
 * timestamp more than five minutes away is refused.
 */
export function verifyReference(secret: string, headers: IncomingHttpHeaders, body: string): boolean {
  const id = String(headers['webhook-id']);
  const timestamp = String(headers['webhook-timestamp']);
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return String(headers['webhook-signature'])
    .split(' ')
    .some((part) => {
      const [version, signature] = part.split(',');
      const given = Buffer.from(signature ?? '', 'base64');
      return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
    });
}
