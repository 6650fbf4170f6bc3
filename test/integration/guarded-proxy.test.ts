import fc from 'fast-check';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { startGuardedProxy, type GuardedProxy } from '../../src/net/guarded-proxy.js';

/**
 * The proxy yt-dlp is pointed at, spoken to over a raw socket as a hostile program would: whatever
 * request line or headers arrive, the answer is a refusal for that connection and the process
 * (the gateway's, here the test's) neither crashes nor leaves a rejection unhandled.
 */

const PUBLIC_V4 = '93.184.216.34';

let proxy: GuardedProxy;
let auth: string;
let origin: Server;
let allowed: string;
const crashes: unknown[] = [];
const onCrash = (err: unknown) => void crashes.push(err);

beforeAll(async () => {
  process.on('unhandledRejection', onCrash);
  process.on('uncaughtException', onCrash);
  origin = createServer((_req, res) => res.end('origin answered'));
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  allowed = `127.0.0.1:${(origin.address() as AddressInfo).port}`;
  proxy = await startGuardedProxy([allowed]);
  const url = new URL(proxy.url);
  auth = `Basic ${Buffer.from(`${url.username}:${url.password}`).toString('base64')}`;
});

afterAll(async () => {
  await proxy.close();
  await new Promise<void>((resolve) => origin.close(() => resolve()));
  process.off('unhandledRejection', onCrash);
  process.off('uncaughtException', onCrash);
});

/** Writes raw bytes to the proxy and returns what it answered before closing (or before `idleMs` of silence). */
function converse(raw: string | Buffer, then?: string, idleMs = 1500): Promise<string> {
  const { hostname, port } = new URL(proxy.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let answer = '';
    let timer = setTimeout(() => socket.destroy(), idleMs);
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      if (then && answer.startsWith('HTTP/1.1 200 Connection Established\r\n\r\n')) {
        socket.write(then);
        then = undefined;
      }
      clearTimeout(timer);
      timer = setTimeout(() => socket.destroy(), idleMs);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
    socket.write(raw);
  });
}

const connectLine = (target: string, headers = `Proxy-Authorization: ${auth}\r\n`) =>
  `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${headers}\r\n`;

/** The proxy still tunnels to an allowed origin and relays a plain request to it. */
async function stillServes(): Promise<void> {
  const tunnelled = await converse(connectLine(allowed), 'GET / HTTP/1.1\r\nHost: origin\r\nConnection: close\r\n\r\n');
  expect(tunnelled).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK[\s\S]*origin answered$/);
  const relayed = await converse(
    `GET http://${allowed}/ HTTP/1.1\r\nHost: ${allowed}\r\nProxy-Authorization: ${auth}\r\nConnection: close\r\n\r\n`,
  );
  expect(relayed).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*origin answered$/);
}

describe('the guarded proxy', () => {
  it('refuses a CONNECT to a port past 65535 on a public address, and stays up (the remote crash)', async () => {
    const answer = await converse(connectLine(`${PUBLIC_V4}:70000`));
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request/);
    expect(crashes).toEqual([]);
    await stillServes();
  });

  it.each([
    [`${PUBLIC_V4}:0`],
    [`${PUBLIC_V4}:65536`],
    [`${PUBLIC_V4}:99999999999999999999`],
    [`[2606:2800:220:1:248:1893:25c8:1946]:70000`],
  ])('refuses CONNECT %s with 400', async (target) => {
    expect(await converse(connectLine(target))).toMatch(/^HTTP\/1\.1 400 Bad Request/);
    expect(crashes).toEqual([]);
  });

  it('refuses an absolute-form request to port 0 with 400, and stays up', async () => {
    const answer = await converse(`GET http://${PUBLIC_V4}:0/ HTTP/1.1\r\nHost: ${PUBLIC_V4}\r\nProxy-Authorization: ${auth}\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(crashes).toEqual([]);
    await stillServes();
  });

  it('survives malformed CONNECT and absolute-form requests (fuzz)', async () => {
    const hosts = fc.constantFrom(
      PUBLIC_V4,
      '[2606:2800:220:1:248:1893:25c8:1946]',
      '127.0.0.1',
      '[::1]',
      '[::ffff:127.0.0.1]',
      '[::ffff:7f00:1]',
      '[fe80::1%25eth0]',
      '[0:0:0:0:0:ffff:169.254.169.254]',
      '169.254.169.254',
      '0',
      '',
      '[',
      '[]',
      ']:',
      'localhost',
      'name.invalid',
      '%00',
      'a'.repeat(300),
    );
    const badPorts = fc.oneof(
      fc.constantFrom('0', '65536', '70000', '99999999999999999999', '-1', '', '+80', '0x50', '8\u00a00'),
      fc.bigInt({ min: 65536n, max: 10n ** 30n }).map(String),
    );
    const anyPort = fc.oneof(badPorts, fc.integer({ min: 1, max: 65535 }).map(String));
    const header = fc.oneof(
      fc.constant(`Proxy-Authorization: ${auth}\r\n`),
      fc.constant(''),
      fc.constant('Proxy-Authorization: Basic bm9wZTpub3Bl\r\n'),
      fc.constant(`Proxy-Authorization: ${auth}\r\nX-Huge: ${'x'.repeat(20_000)}\r\n`),
      fc.string({ maxLength: 40 }).map((s) => `Proxy-Authorization: ${auth}\r\nX-${s.replace(/[\r\n:]/g, '')}: ${s}\r\n`),
    );
    // A public address on a valid port would really be dialled (no network here): only ports that must be refused go with it.
    const target = fc.tuple(hosts, anyPort).map(([host, port]) => {
      const isPublic = host === PUBLIC_V4 || host.startsWith('[2606');
      return `${host}:${isPublic && /^\d+$/.test(port) && Number(port) >= 1 && Number(port) <= 65535 ? '70000' : port}`;
    });
    const request = fc.oneof(
      fc.tuple(target, header).map(([t, h]) => connectLine(t, h)),
      fc
        .tuple(target, header, fc.constantFrom('GET', 'POST', 'HEAD', 'PUT'))
        .map(([t, h, m]) => `${m} http://${t}/p?q HTTP/1.1\r\nHost: ${t}\r\n${h}Content-Length: 0\r\n\r\n`),
      fc.tuple(target, header).map(([t, h]) => `GET https://${t}/ HTTP/1.1\r\nHost: x\r\n${h}\r\n`),
      fc.uint8Array({ minLength: 1, maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
      fc.tuple(target, header).map(([t, h]) => connectLine(t, h).slice(0, Math.max(1, t.length))),
    );
    // 200 requests, ten at a time: each conversation waits out its idle time beside the others.
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: 10, maxLength: 10 }), async (raws) => {
        const answers = await Promise.all(raws.map((raw) => converse(raw, undefined, 100)));
        for (const answer of answers) expect(answer).not.toMatch(/^HTTP\/1\.1 200/);
        expect(crashes).toEqual([]);
      }),
      { numRuns: 20, seed: 2126 },
    );
    await stillServes();
    expect(crashes).toEqual([]);
  }, 120_000);
});
