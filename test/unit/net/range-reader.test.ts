import { randomBytes } from 'node:crypto';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FetchError } from '../../../src/net/fetch-error.js';
import { GuardedHttpClient } from '../../../src/net/guarded-client.js';
import { RangeReader, RangesUnsupportedError } from '../../../src/net/range-reader.js';

const BLOCK = 1024;
const file = randomBytes(10 * BLOCK + 100);

/** Servers and clients a test opened; closed after each test even when it fails. */
const opened: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (opened.length) await opened.pop()!();
});

/** A local server with a client allowed to reach it, and the Range headers it was sent. */
async function serve(handler: RequestListener): Promise<{ url: string; client: GuardedHttpClient; ranges: string[] }> {
  const ranges: string[] = [];
  const server: Server = createServer((req, res) => {
    ranges.push(req.headers.range ?? '(none)');
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const client = new GuardedHttpClient({ allowHosts: [`127.0.0.1:${port}`] });
  opened.push(
    () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
    () => client.close(),
  );
  return { url: `http://127.0.0.1:${port}/media.mp4`, client, ranges };
}

/** Answers `bytes=a-b` with 206 and exactly that part, as a CDN does. */
const ranged: RequestListener = (req, res) => {
  const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '')!;
  const [start, end] = [Number(m[1]), Math.min(Number(m[2]), file.length - 1)];
  res
    .writeHead(206, { 'content-range': `bytes ${start}-${end}/${file.length}`, 'content-length': end - start + 1 })
    .end(file.subarray(start, end + 1));
};

const reader = (client: GuardedHttpClient, url: string, maxBytes = 1 << 20) =>
  new RangeReader(client, url, { maxBytes, timeoutMs: 5000, signal: new AbortController().signal, blockBytes: BLOCK });

describe('RangeReader', () => {
  it('learns the size from the first block and fetches neighbouring missing blocks in one request', async () => {
    const { url, client, ranges } = await serve(ranged);
    const r = reader(client, url);
    expect(await r.open()).toBe(file.length);
    expect(Buffer.from(await r.read(10, 20))).toEqual(file.subarray(10, 20)); // inside the first block: no request
    expect(Buffer.from(await r.read(2 * BLOCK + 5, 5 * BLOCK + 7))).toEqual(file.subarray(2 * BLOCK + 5, 5 * BLOCK + 7));
    expect(Buffer.from(await r.read(BLOCK - 3, 3 * BLOCK))).toEqual(file.subarray(BLOCK - 3, 3 * BLOCK)); // block 1 only is new
    expect(ranges).toEqual([`bytes=0-${BLOCK - 1}`, `bytes=${2 * BLOCK}-${6 * BLOCK - 1}`, `bytes=${BLOCK}-${2 * BLOCK - 1}`]);
    expect(r.requests).toBe(3);
    expect(r.fetched).toBe(6 * BLOCK);
  });

  it('reads a part near the end through to the end, in one request', async () => {
    const { url, client, ranges } = await serve(ranged);
    const r = reader(client, url);
    await r.open();
    expect(Buffer.from(await r.read(file.length - 2 * BLOCK + 10, file.length - BLOCK))).toEqual(
      file.subarray(file.length - 2 * BLOCK + 10, file.length - BLOCK),
    );
    expect(Buffer.from(await r.read(file.length - 50, file.length))).toEqual(file.subarray(file.length - 50));
    expect(ranges).toEqual([`bytes=0-${BLOCK - 1}`, `bytes=${8 * BLOCK}-${file.length - 1}`]);
  });

  it('refuses a part that would pass the cap before asking for it, however large the part claims to be', async () => {
    const { url, client, ranges } = await serve(ranged);
    const r = reader(client, url, 3 * BLOCK);
    await r.open();
    await expect(r.read(BLOCK, 9 * BLOCK)).rejects.toMatchObject({ kind: 'too_large' });
    await r.read(BLOCK, 3 * BLOCK); // exactly the cap
    await expect(r.read(5 * BLOCK, 5 * BLOCK + 1)).rejects.toBeInstanceOf(FetchError);
    expect(ranges).toHaveLength(2);
    expect(r.fetched).toBe(3 * BLOCK);
  });

  it('tells a server that ignores Range apart, and takes a small whole file as it is', async () => {
    const whole: RequestListener = (_req, res) => void res.writeHead(200, { 'content-length': file.length }).end(file);
    const big = await serve(whole);
    await expect(reader(big.client, big.url).open()).rejects.toBeInstanceOf(RangesUnsupportedError);
    const small = await serve((_req, res) => void res.writeHead(200, { 'content-length': 100 }).end(file.subarray(0, 100)));
    const r = reader(small.client, small.url);
    expect(await r.open()).toBe(100);
    expect(Buffer.from(await r.read(0, 100))).toEqual(file.subarray(0, 100));
  });

  it('refuses an answer that is not the part asked for', async () => {
    const shifted = await serve((req, res) => {
      const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '')!;
      const start = Number(m[1]) + (m[1] === '0' ? 0 : 1);
      res
        .writeHead(206, { 'content-range': `bytes ${start}-${start + BLOCK - 1}/${file.length}`, 'content-length': BLOCK })
        .end(file.subarray(start, start + BLOCK));
    });
    const r = reader(shifted.client, shifted.url);
    await r.open();
    await expect(r.read(3 * BLOCK, 3 * BLOCK + 10)).rejects.toMatchObject({ kind: 'network' });
  });
});
