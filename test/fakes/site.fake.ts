import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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
  file(path: string, body: Buffer, contentType: string): void;
  close(): Promise<void>;
}

export async function startFakeSite(): Promise<FakeSite> {
  const routes = new Map<string, Handler>();
  const server = createServer((req, res) => {
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
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
    file(path, body, contentType) {
      routes.set(path, (req, res) => {
        res.writeHead(200, { 'content-type': contentType, 'content-length': body.length });
        res.end(req.method === 'HEAD' ? undefined : body);
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
