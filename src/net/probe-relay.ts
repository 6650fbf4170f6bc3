import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { GuardedHttpClient } from './guarded-client.js';

export interface RelayOptions {
  /** Bytes the relay passes on in all, over every request the reader makes; past it the reader gets EOF. */
  maxBytes: number;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Request headers sent upstream with every request besides the reader's Range (a stream's Referer, cookies). */
  headers?: Record<string, string>;
  /** Told of every chunk passed on (a stream counts what it reads). */
  onBytes?: (n: number) => void;
}

/** A running relay: its loopback URL, and how to stop it (every upstream request it has open is aborted). */
export interface Relay {
  url: string;
  close(): Promise<void>;
}

const PASSED_HEADERS = ['content-type', 'content-length', 'content-range', 'accept-ranges', 'last-modified', 'etag'];

/**
 * Serves one checked URL to a local reader (ffprobe) at `http://127.0.0.1:<port>/<token>`: each
 * request, with its Range header, is made again through the guarded client, so the address rules,
 * redirects and deadline hold for the reader too, and the bytes it may read in all are capped. A
 * random token in the path keeps other local processes out; only GET and HEAD of that path answer.
 */
export async function withProbeRelay<T>(
  client: GuardedHttpClient,
  target: string,
  options: RelayOptions,
  use: (relayUrl: string) => Promise<T>,
): Promise<T> {
  const relay = await openRelay(client, target, options);
  try {
    return await use(relay.url);
  } finally {
    await relay.close();
  }
}

/** Starts a relay for one checked URL (see withProbeRelay); the caller closes it. */
export async function openRelay(client: GuardedHttpClient, target: string, options: RelayOptions): Promise<Relay> {
  const token = randomBytes(16).toString('hex');
  const sockets = new Set<Socket>();
  let passed = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url !== `/${token}` || (req.method !== 'GET' && req.method !== 'HEAD')) return void res.writeHead(404).end();
    const headers: Record<string, string> = { ...options.headers };
    if (typeof req.headers.range === 'string') headers.range = req.headers.range;
    client
      .open(target, { method: req.method, headers, timeoutMs: options.timeoutMs, signal: options.signal, throwOnHttpError: false })
      .then((upstream) => {
        const out: Record<string, string> = {};
        for (const h of PASSED_HEADERS) if (upstream.headers[h]) out[h] = upstream.headers[h];
        res.writeHead(upstream.status, out);
        upstream.body.on('data', (chunk: Buffer) => {
          passed += chunk.length;
          options.onBytes?.(chunk.length);
          if (passed > options.maxBytes) {
            upstream.body.destroy();
            res.destroy();
            return;
          }
          if (!res.write(chunk)) upstream.body.pause();
        });
        res.on('drain', () => upstream.body.resume());
        res.on('close', () => upstream.body.destroy());
        upstream.body.on('end', () => res.end());
        upstream.body.on('error', () => res.destroy());
      })
      // Whatever goes wrong ends this relay's answer, never the process (headers may be out already).
      .catch(() => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/${token}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
