import { createServer, type RequestListener, type Server } from 'node:http';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError } from '../../../src/errors.js';
import { FetchError } from '../../../src/net/fetch-error.js';
import { GuardedHttpClient } from '../../../src/net/guarded-client.js';

interface Local {
  server: Server;
  origin: string;
  hostPort: string;
  port: number;
  connections: () => number;
}

async function serve(handler: RequestListener): Promise<Local> {
  let connections = 0;
  const server = createServer(handler);
  server.on('connection', () => void connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { server, port, origin: `http://127.0.0.1:${port}`, hostPort: `127.0.0.1:${port}`, connections: () => connections };
}

const closeAll = (...servers: Local[]) =>
  Promise.all(servers.map((s) => new Promise<void>((r) => (s.server.closeAllConnections(), s.server.close(() => r())))));

const code = async (p: Promise<unknown>) => {
  try {
    await p;
    return 'resolved';
  } catch (err) {
    return err instanceof AppError ? err.code : err instanceof FetchError ? err.kind : String(err);
  }
};

describe('GuardedHttpClient', () => {
  let target: Local;
  beforeAll(async () => {
    target = await serve((_req, res) => res.end('secret'));
  });
  afterAll(() => closeAll(target));

  it.each([
    (l: Local) => `${l.origin}/`,
    (l: Local) => `http://[::ffff:127.0.0.1]:${l.port}/`,
    (l: Local) => `http://2130706433:${l.port}/`,
    (l: Local) => `http://0x7f.1:${l.port}/`,
    (l: Local) => `http://127.1:${l.port}/`,
    (l: Local) => `http://localhost:${l.port}/`,
    (l: Local) => `http://[::1]:${l.port}/`,
    () => 'http://169.254.169.254/latest/meta-data/',
    () => 'http://10.0.0.1/',
    () => 'http://100.64.0.1/',
    () => 'http://[fd00::1]/',
    () => 'file:///etc/passwd',
    () => 'ftp://example.com/a',
    () => 'gopher://example.com/',
    (l: Local) => `http://user:pass@127.0.0.1:${l.port}/`,
  ])('refuses %p with URL_NOT_ALLOWED before connecting', async (make) => {
    const client = new GuardedHttpClient();
    const before = target.connections();
    expect(await code(client.request(make(target)))).toBe('URL_NOT_ALLOWED');
    expect(target.connections()).toBe(before);
    await client.close();
  });

  it('lets an allow-listed host:port through, and only that port', async () => {
    const other = await serve((_req, res) => res.end('other'));
    const client = new GuardedHttpClient({ allowHosts: [target.hostPort] });
    const res = await client.request(`${target.origin}/x`);
    expect(res.body.toString()).toBe('secret');
    expect(await code(client.request(`${other.origin}/`))).toBe('URL_NOT_ALLOWED');
    expect(other.connections()).toBe(0);
    await client.close();
    await closeAll(other);
  });

  it('judges a name at connect time: localhost is refused unless allow-listed by name', async () => {
    const byName = new GuardedHttpClient({ allowHosts: [`localhost:${target.port}`] });
    expect((await byName.request(`http://localhost:${target.port}/`)).body.toString()).toBe('secret');
    await byName.close();
  });

  it('judges the address again at connect time, so a rebinding DNS answer cannot reach loopback', async () => {
    let calls = 0;
    // First answer (the pre-check) is public; every later one (the connect) is loopback.
    const rebinding = async () => [{ address: calls++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 }];
    const client = new GuardedHttpClient({ resolve: rebinding });
    const before = target.connections();
    expect(await code(client.request(`http://rebind.example:${target.port}/`))).toBe('URL_NOT_ALLOWED');
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(target.connections()).toBe(before);
    await client.close();
  });

  it('re-checks every redirect: allowed → loopback is refused and the target sees nothing', async () => {
    const hop = await serve((_req, res) => res.writeHead(302, { location: `${target.origin}/secret` }).end());
    const client = new GuardedHttpClient({ allowHosts: [hop.hostPort] });
    const before = target.connections();
    expect(await code(client.request(`${hop.origin}/`))).toBe('URL_NOT_ALLOWED');
    expect(target.connections()).toBe(before);
    await client.close();
    await closeAll(hop);
  });

  it('follows redirects within the allow list, reports the final URL, and caps the chain', async () => {
    let n = 0;
    const chain = await serve((req, res) => {
      n++;
      if (req.url === '/loop') return void res.writeHead(302, { location: '/loop' }).end();
      if (req.url === '/a') return void res.writeHead(301, { location: '/b' }).end();
      res.end('landed');
    });
    const client = new GuardedHttpClient({ allowHosts: [chain.hostPort], maxRedirects: 3 });
    const res = await client.request(`${chain.origin}/a`);
    expect(res.url).toBe(`${chain.origin}/b`);
    expect(res.body.toString()).toBe('landed');
    n = 0;
    expect(await code(client.request(`${chain.origin}/loop`))).toBe('too_many_redirects');
    expect(n).toBe(4);
    await client.close();
    await closeAll(chain);
  });

  it('caps bodies by content-length and by counting, and removes a partial download', async () => {
    const big = await serve((req, res) => {
      if (req.url === '/declared') {
        res.writeHead(200, { 'content-length': 5000 });
        return void res.end(Buffer.alloc(5000));
      }
      res.writeHead(200); // chunked, no length
      res.write(Buffer.alloc(3000));
      res.end(Buffer.alloc(3000));
    });
    const client = new GuardedHttpClient({ allowHosts: [big.hostPort], maxBytes: 4096 });
    expect(await code(client.request(`${big.origin}/declared`))).toBe('too_large');
    expect(await code(client.request(`${big.origin}/chunked`))).toBe('too_large');
    const dest = join(mkdtempSync(join(tmpdir(), 'guarded-')), 'media');
    expect(await code(client.download(`${big.origin}/chunked`, dest))).toBe('too_large');
    expect(existsSync(dest)).toBe(false);
    const ok = await client.download(`${big.origin}/chunked`, dest, { maxBytes: 10_000 });
    expect(ok.bytes).toBe(6000);
    expect(readFileSync(dest).length).toBe(6000);
    await client.close();
    await closeAll(big);
  });

  it('times out on a server that never answers', async () => {
    const silent = await serve(() => {});
    const client = new GuardedHttpClient({ allowHosts: [silent.hostPort] });
    const started = Date.now();
    expect(await code(client.request(`${silent.origin}/`, { timeoutMs: 300 }))).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(5000);
    await client.close();
    await closeAll(silent);
  });

  it('reports HTTP errors as http_status unless asked not to', async () => {
    const missing = await serve((_req, res) => res.writeHead(404).end('nope'));
    const client = new GuardedHttpClient({ allowHosts: [missing.hostPort] });
    const err = await client.request(`${missing.origin}/`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FetchError);
    expect((err as FetchError).status).toBe(404);
    expect((await client.request(`${missing.origin}/`, { throwOnHttpError: false })).status).toBe(404);
    await client.close();
    await closeAll(missing);
  });
});
