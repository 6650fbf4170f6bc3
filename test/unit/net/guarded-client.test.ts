import { lookup, type LookupAddress } from 'node:dns';
import diagnostics from 'node:diagnostics_channel';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError } from '../../../src/errors.js';
import { FetchError } from '../../../src/net/fetch-error.js';
import { GuardedHttpClient, type GuardedClientOptions } from '../../../src/net/guarded-client.js';

interface Local {
  server: Server;
  origin: string;
  hostPort: string;
  port: number;
  connections: () => number;
}

/** Servers and clients a test opened; closed after each test even when it fails. */
const opened: Array<() => Promise<unknown>> = [];

async function serve(handler: RequestListener): Promise<Local> {
  let connections = 0;
  const server = createServer(handler);
  opened.push(() => closeServer(server));
  server.on('connection', () => void connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { server, port, origin: `http://127.0.0.1:${port}`, hostPort: `127.0.0.1:${port}`, connections: () => connections };
}

const closeServer = (server: Server) => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r())));

function guarded(options?: GuardedClientOptions): GuardedHttpClient {
  const client = new GuardedHttpClient(options);
  opened.push(() => client.close());
  return client;
}

/** What a call ended with: 'resolved', an AppError code, a FetchError kind, or the thrown value. */
const outcome = async (p: Promise<unknown>): Promise<unknown> => {
  try {
    await p;
    return 'resolved';
  } catch (err) {
    return err instanceof AppError ? err.code : err instanceof FetchError ? err.kind : err;
  }
};

/** Every socket undici tries to open, so a test can prove no connection was even attempted. */
const attempts: string[] = [];
const onConnect = (msg: unknown) => {
  const { hostname, port } = (msg as { connectParams: { hostname: string; port: string } }).connectParams;
  attempts.push(`${hostname}:${port}`);
};

/** The system resolver, recorded (only ever asked about localhost here). */
function spyResolver() {
  const names: string[] = [];
  const resolve = (name: string) => {
    names.push(name);
    return new Promise<LookupAddress[]>((ok, fail) => lookup(name, { all: true }, (err, a) => (err ? fail(err) : ok(a))));
  };
  return { names, resolve };
}

describe('GuardedHttpClient', () => {
  let target: Local;
  beforeAll(async () => {
    diagnostics.subscribe('undici:client:beforeConnect', onConnect);
    target = await serve((_req, res) => res.end('secret'));
    opened.pop(); // lives for the whole file
  });
  afterAll(async () => {
    diagnostics.unsubscribe('undici:client:beforeConnect', onConnect);
    await closeServer(target.server);
  });
  beforeEach(() => void attempts.splice(0));
  afterEach(() => Promise.all(opened.splice(0).map((close) => close())));

  it.each([
    (l: Local) => `${l.origin}/`,
    (l: Local) => `http://[::ffff:127.0.0.1]:${l.port}/`,
    (l: Local) => `http://2130706433:${l.port}/`,
    (l: Local) => `http://0x7f.1:${l.port}/`,
    (l: Local) => `http://127.1:${l.port}/`,
    (l: Local) => `http://[::1]:${l.port}/`,
    (l: Local) => `http://0.0.0.0:${l.port}/`,
    () => 'http://169.254.169.254/latest/meta-data/',
    () => 'http://[fd00:ec2::254]/latest/meta-data/',
    () => 'http://10.0.0.1/',
    () => 'http://100.64.0.1/',
    () => 'http://[fd00::1]/',
    () => 'http://[64:ff9b::7f00:1]/',
    () => 'file:///etc/passwd',
    () => 'ftp://example.com/a',
    () => 'gopher://example.com/',
    () => 'data:text/plain,hi',
    () => 'not a url',
    (l: Local) => `http://user:pass@127.0.0.1:${l.port}/`,
    (l: Local) => `http://user@127.0.0.1:${l.port}/`,
  ])('refuses %p with URL_NOT_ALLOWED before connecting', async (make) => {
    const client = guarded();
    const before = target.connections();
    const err = await client.request(make(target)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('URL_NOT_ALLOWED');
    expect((err as AppError).message).toMatch(/^The URL is not allowed: .+\.$/);
    expect(target.connections()).toBe(before);
    expect(attempts).toEqual([]);
  });

  it('checkUrl returns the parsed URL for public addresses without connecting', async () => {
    const resolve = async (name: string): Promise<LookupAddress[]> =>
      name === 'media.example'
        ? [{ address: '93.184.216.34', family: 4 }]
        : [
            { address: '93.184.216.34', family: 4 },
            { address: '10.0.0.7', family: 4 },
          ];
    const client = guarded({ resolve });
    expect((await client.checkUrl('http://8.8.8.8/x?y=1')).href).toBe('http://8.8.8.8/x?y=1');
    expect((await client.checkUrl('https://[2606:4700::1111]/')).hostname).toBe('[2606:4700::1111]');
    expect((await client.checkUrl('https://Media.Example/v.mp4')).hostname).toBe('media.example');
    // One private answer among public ones is enough to refuse.
    expect(await outcome(client.checkUrl('https://mixed.example/'))).toBe('URL_NOT_ALLOWED');
    expect(attempts).toEqual([]);
  });

  it('lets an allow-listed host:port through, and only that port', async () => {
    const other = await serve((_req, res) => res.end('other'));
    const client = guarded({ allowHosts: [target.hostPort] });
    const res = await client.request(`${target.origin}/x`);
    expect(res).toMatchObject({ url: `${target.origin}/x`, status: 200 });
    expect(res.body.toString()).toBe('secret');
    expect(await outcome(client.request(`${other.origin}/`))).toBe('URL_NOT_ALLOWED');
    expect(other.connections()).toBe(0);
    // The exemption covers the address only: credentials and other schemes stay refused.
    const before = target.connections();
    for (const url of [`http://user@${target.hostPort}/`, `http://u:p@${target.hostPort}/`, `ftp://${target.hostPort}/`]) {
      expect(await outcome(client.request(url))).toBe('URL_NOT_ALLOWED');
    }
    expect(target.connections()).toBe(before);
  });

  it('refuses a name that resolves to loopback (localhost) from its DNS answers', async () => {
    const dns = spyResolver();
    const client = guarded({ resolve: dns.resolve });
    const before = target.connections();
    expect(await outcome(client.request(`http://localhost:${target.port}/`))).toBe('URL_NOT_ALLOWED');
    expect(dns.names).toEqual(['localhost']);
    expect(target.connections()).toBe(before);
  });

  it('lets localhost:<port> through when allow-listed by name, resolving it at connect time', async () => {
    const other = await serve((_req, res) => res.end('other'));
    const dns = spyResolver();
    const client = guarded({ allowHosts: [`LOCALHOST:${target.port}`], resolve: dns.resolve });
    expect((await client.request(`http://localhost:${target.port}/`)).body.toString()).toBe('secret');
    expect(dns.names).toEqual(['localhost']); // the connect's lookup; the allow-listed pre-check needs none
    expect(await outcome(client.request(`http://localhost:${other.port}/`))).toBe('URL_NOT_ALLOWED');
    expect(other.connections()).toBe(0);
  });

  it.each([[[] as string[]], [['rebind.test:1']]])(
    'judges the address again at connect time, so a rebinding answer cannot reach loopback (allow list %j)',
    async (allowHosts) => {
      const dns = spyResolver();
      // The pre-check is told a public address; the connect then gets the real answer for localhost.
      const resolve = async (name: string) =>
        dns.names.push(name) === 1 ? [{ address: '93.184.216.34', family: 4 }] : dns.resolve('localhost');
      const client = guarded({ allowHosts, resolve });
      const before = target.connections();
      expect(await outcome(client.request(`http://rebind.test:${target.port}/`))).toBe('URL_NOT_ALLOWED');
      expect(dns.names.slice(0, 2)).toEqual(['rebind.test', 'rebind.test']);
      expect(attempts).toEqual([`rebind.test:${target.port}`]); // a connect was attempted and stopped at its lookup
      expect(target.connections()).toBe(before);
    },
  );

  it('re-checks every redirect: allowed → loopback is refused and the target sees nothing', async () => {
    const hop = await serve((_req, res) => res.writeHead(302, { location: `${target.origin}/secret` }).end());
    const client = guarded({ allowHosts: [hop.hostPort] });
    const before = target.connections();
    expect(await outcome(client.request(`${hop.origin}/`))).toBe('URL_NOT_ALLOWED');
    expect(hop.connections()).toBe(1);
    expect(target.connections()).toBe(before);
    expect(attempts).toEqual([`127.0.0.1:${hop.port}`]);
  });

  it('follows redirects across allow-listed servers, reports the final URL, and caps the chain', async () => {
    let n = 0;
    const last = await serve((req, res) => res.end(`landed ${req.method} ${req.url}`));
    const first = await serve((req, res) => {
      n++;
      if (req.url === '/loop') return void res.writeHead(302, { location: '/loop' }).end();
      if (req.url === '/a') return void res.writeHead(301, { location: '/b?x=1' }).end(); // relative
      if (req.url === '/b?x=1') return void res.writeHead(303, { location: `${last.origin}/c` }).end();
      res.writeHead(500).end();
    });
    const client = guarded({ allowHosts: [first.hostPort, last.hostPort], maxRedirects: 3 });
    const res = await client.request(`${first.origin}/a`);
    expect(res.url).toBe(`${last.origin}/c`);
    expect(res.body.toString()).toBe('landed GET /c');
    n = 0;
    expect(await outcome(client.request(`${first.origin}/loop`))).toBe('too_many_redirects');
    expect(n).toBe(4); // the first request and three redirects
    n = 0;
    expect(await outcome(client.request(`${first.origin}/loop`, { maxRedirects: 0 }))).toBe('too_many_redirects');
    expect(n).toBe(1);
  });

  it('keeps caller credentials on the same origin and drops them on a redirect to another', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const last = await serve((req, res) => (seen.push(req.headers), res.end('ok')));
    const first = await serve((req, res) => {
      seen.push(req.headers);
      res.writeHead(307, { location: req.url === '/' ? '/again' : `${last.origin}/` }).end();
    });
    const client = guarded({ allowHosts: [first.hostPort, last.hostPort], userAgent: 'test-agent' });
    await client.request(`${first.origin}/`, { headers: { Authorization: 'Bearer s3cret', Cookie: 'a=1', Accept: 'text/html' } });
    expect(seen.map((h) => h.authorization)).toEqual(['Bearer s3cret', 'Bearer s3cret', undefined]);
    expect(seen.map((h) => h.cookie)).toEqual(['a=1', 'a=1', undefined]);
    expect(seen.map((h) => h.accept)).toEqual(['text/html', 'text/html', 'text/html']);
    expect(seen.map((h) => h['user-agent'])).toEqual(['test-agent', 'test-agent', 'test-agent']);
  });

  it('keeps HEAD a HEAD through redirects and does not cap a HEAD by its declared length', async () => {
    const methods: string[] = [];
    const srv = await serve((req, res) => {
      methods.push(req.method ?? '');
      if (req.url === '/') return void res.writeHead(302, { location: '/file' }).end();
      res.writeHead(200, { 'content-length': 1_000_000, 'x-multi': ['a', 'b'] }).end();
    });
    const client = guarded({ allowHosts: [srv.hostPort], maxBytes: 1000 });
    const res = await client.request(`${srv.origin}/`, { method: 'HEAD' });
    expect(methods).toEqual(['HEAD', 'HEAD']);
    expect(res.headers['content-length']).toBe('1000000');
    expect(res.headers['x-multi']).toBe('a, b');
    expect(res.body.length).toBe(0);
  });

  it('caps bodies by content-length and by counting, and removes a partial download', async () => {
    const big = await serve((req, res) => {
      if (req.url === '/declared') {
        // Declares too much, then stalls: only the up-front content-length check can answer in time.
        res.writeHead(200, { 'content-length': 5000 });
        return void res.write(Buffer.alloc(100));
      }
      res.writeHead(200); // chunked, no length
      res.write(Buffer.alloc(3000));
      // Not synchronisation: the rest of the body comes later, as from a slow upstream.
      setTimeout(() => res.end(Buffer.alloc(3000)), 20);
    });
    const client = guarded({ allowHosts: [big.hostPort], maxBytes: 4096, timeoutMs: 2000 });
    expect(await outcome(client.request(`${big.origin}/declared`))).toBe('too_large');
    expect(await outcome(client.request(`${big.origin}/chunked`))).toBe('too_large');
    expect((await client.request(`${big.origin}/chunked`, { maxBytes: 6000 })).body.length).toBe(6000);
    const dir = mkdtempSync(join(tmpdir(), 'guarded-'));
    const dest = join(dir, 'media');
    expect(await outcome(client.download(`${big.origin}/chunked`, dest))).toBe('too_large');
    expect(existsSync(dest)).toBe(false);
    expect(await outcome(client.download(`${big.origin}/declared`, dest))).toBe('too_large');
    expect(existsSync(dest)).toBe(false);
    const ok = await client.download(`${big.origin}/chunked`, dest, { maxBytes: 10_000 });
    expect(ok).toMatchObject({ url: `${big.origin}/chunked`, status: 200, bytes: 6000 });
    expect(readFileSync(dest).length).toBe(6000);
  });

  it('leaves an existing file alone when the URL is refused', async () => {
    const dest = join(mkdtempSync(join(tmpdir(), 'guarded-')), 'keep');
    writeFileSync(dest, 'mine');
    const client = guarded();
    expect(await outcome(client.download(`${target.origin}/`, dest))).toBe('URL_NOT_ALLOWED');
    expect(readFileSync(dest, 'utf8')).toBe('mine');
  });

  it('times out on a server that never answers, and passes a caller abort through', async () => {
    const silent = await serve(() => {});
    const client = guarded({ allowHosts: [silent.hostPort] });
    const started = Date.now();
    expect(await outcome(client.request(`${silent.origin}/`, { timeoutMs: 300 }))).toBe('timeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(5000);
    const dest = join(mkdtempSync(join(tmpdir(), 'guarded-')), 'media');
    expect(await outcome(client.download(`${silent.origin}/`, dest, { timeoutMs: 300 }))).toBe('timeout');

    const stuckDns = guarded({ resolve: () => new Promise<LookupAddress[]>(() => {}) });
    expect(await outcome(stuckDns.request('http://slow-dns.test/', { timeoutMs: 300 }))).toBe('timeout');

    const controller = new AbortController();
    const reason = new Error('caller gave up');
    // The caller gives up once its request has reached a server that never answers.
    const abortOnArrival = await serve(() => controller.abort(reason));
    const aborting = guarded({ allowHosts: [abortOnArrival.hostPort] });
    expect(await outcome(aborting.request(`${abortOnArrival.origin}/`, { signal: controller.signal }))).toBe(reason);
  });

  it('reports HTTP errors as http_status unless asked not to, without leaking request headers', async () => {
    const missing = await serve((_req, res) => res.writeHead(404).end('nope'));
    const client = guarded({ allowHosts: [missing.hostPort] });
    const err = await client.request(`${missing.origin}/`, { headers: { authorization: 'Bearer s3cret' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FetchError);
    expect((err as FetchError).status).toBe(404);
    expect((err as FetchError).message).not.toContain('s3cret');
    const res = await client.request(`${missing.origin}/`, { throwOnHttpError: false });
    expect(res.status).toBe(404);
    expect(res.body.toString()).toBe('nope');
  });

  it('reports a refused connection as a network error, and refuses work after close()', async () => {
    const gone = await serve(() => {});
    await opened.pop()!(); // closed: its port now refuses connections
    const client = new GuardedHttpClient({ allowHosts: [gone.hostPort, target.hostPort] });
    expect(await outcome(client.request(`${gone.origin}/`))).toBe('network');
    expect((await client.request(`${target.origin}/`)).status).toBe(200);
    await client.close();
    expect(await outcome(client.request(`${target.origin}/`))).toBe('network');
  });
});
