import { createReadStream, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * A stand-in for a video site or CDN on 127.0.0.1: routes by path, counts every connection and
 * request, so a test can prove that nothing reached it.
 */
export interface FakeSite {
  origin: string;
  hostPort: string;
  connections: number;
  hits: string[];
  route(path: string, handler: Handler): void;
  page(path: string, html: string): void;
  /** As `page`, with the HTML read from `diskPath` now: a fixture page, each `{{origin}}` in it written as this site's origin. */
  pageFromDisk(path: string, diskPath: string): void;
  /** Serves bytes, honouring a single `Range: bytes=…` (206 / 416), like a CDN would. */
  file(path: string, body: Buffer, contentType: string): void;
  /** As `file`, the bytes read from `diskPath` as each answer goes out: a large file is never in this process's memory. */
  fileFromDisk(path: string, diskPath: string, contentType: string): void;
  /** Media whose download never finishes (a thousand bytes, then nothing): a job fetching it runs until canceled or swept. */
  endless(path: string, contentType: string): void;
  close(): Promise<void>;
}

/**
 * `keepAliveTimeoutMs`: how long an idle connection is kept (Node's default, 5 s, unless said): a
 * test whose gateway is busy for seconds keeps them longer, so that no request is sent on a
 * connection the site is closing at that moment (a race of keep-alive, not what such a test tests).
 * `host`: the address it listens on (containers reach 0.0.0.0 through their bridge); `origin` is on 127.0.0.1 still.
 */
export async function startFakeSite(options: { keepAliveTimeoutMs?: number; host?: string } = {}): Promise<FakeSite> {
  const routes = new Map<string, Handler>();
  const server = createServer({ keepAliveTimeout: options.keepAliveTimeoutMs }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    site.hits.push(`${req.method} ${path}`);
    const handler = routes.get(path);
    if (!handler) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    handler(req, res);
  });
  server.on('connection', () => {
    site.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, options.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const site: FakeSite = {
    origin: `http://127.0.0.1:${port}`,
    hostPort: `127.0.0.1:${port}`,
    connections: 0,
    hits: [],
    route: (path, handler) => void routes.set(path, handler),
    page(path, html) {
      routes.set(path, (req, res) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(req.method === 'HEAD' ? undefined : html);
      });
    },
    pageFromDisk(path, diskPath) {
      site.page(path, readFileSync(diskPath, 'utf8').replaceAll('{{origin}}', site.origin));
    },
    file(path, body, contentType) {
      routes.set(path, (req, res) => serveBytes(req, res, body, contentType));
    },
    fileFromDisk(path, diskPath, contentType) {
      const { size } = statSync(diskPath);
      // Through pipeline: an answer cut short (the client gone) closes its file too.
      routes.set(path, (req, res) =>
        answerRange(req, res, size, contentType, (start, end) =>
          pipeline(createReadStream(diskPath, { start, end }), res, () => undefined),
        ),
      );
    },
    endless(path, contentType) {
      routes.set(path, (_req, res) => {
        res.writeHead(200, { 'content-type': contentType });
        res.write(Buffer.alloc(1000));
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return site;
}

/**
 * 200 with the whole body, or 206 with one range of it when the request asks for a satisfiable
 * `bytes=a-b`, `bytes=a-` or `bytes=-n`; 416 when it asks for none of the body. A header that is
 * not a single byte range is ignored (full 200), as RFC 9110 allows.
 */
export function serveBytes(req: IncomingMessage, res: ServerResponse, body: Buffer, contentType: string): void {
  answerRange(req, res, body.length, contentType, (start, end) => res.end(body.subarray(start, end + 1)));
}

/** The answer serveBytes describes, for a body of `size` bytes that `send` writes from `start` to `end` (inclusive) and ends. */
function answerRange(
  req: IncomingMessage,
  res: ServerResponse,
  size: number,
  contentType: string,
  send: (start: number, end: number) => void,
): void {
  const range = parseRange(req.headers.range, size);
  if (range === 'unsatisfiable') {
    res.writeHead(416, { 'content-range': `bytes */${size}`, 'accept-ranges': 'bytes' }).end();
    return;
  }
  if (!range) {
    res.writeHead(200, { 'content-type': contentType, 'content-length': size, 'accept-ranges': 'bytes' });
  } else {
    res.writeHead(206, {
      'content-type': contentType,
      'content-length': range[1] - range[0] + 1,
      'content-range': `bytes ${range[0]}-${range[1]}/${size}`,
      'accept-ranges': 'bytes',
    });
  }
  const [start, end] = range ?? [0, size - 1];
  if (req.method === 'HEAD' || size === 0) res.end();
  else send(start, end);
}

/** Inclusive [start, end] of a single byte range, null to ignore the header, or 'unsatisfiable'. */
function parseRange(header: string | undefined, size: number): [number, number] | null | 'unsatisfiable' {
  const m = header?.trim().match(/^bytes=(\d*)-(\d*)$/);
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return [Math.max(0, size - suffix), size - 1];
  }
  const start = Number(m[1]);
  const last = m[2] === '' ? Infinity : Number(m[2]);
  if (last < start) return null; // a malformed spec: ignore the header
  if (start >= size) return 'unsatisfiable';
  return [start, Math.min(last, size - 1)];
}
