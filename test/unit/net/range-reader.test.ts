import { randomBytes } from 'node:crypto';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FetchError } from '../../../src/net/fetch-error.js';
import { GuardedHttpClient } from '../../../src/net/guarded-client.js';
import {
  MemoryBudgetError,
  PartTooLargeError,
  RangeReader,
  RangesUnsupportedError,
  type MemoryLease,
} from '../../../src/net/range-reader.js';

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

/** A read's bytes, whether it came whole or as a stream of pieces. */
async function bytesOf(read: Promise<Uint8Array | ReadableStream<Uint8Array>>): Promise<Buffer> {
  const got = await read;
  if (!(got instanceof ReadableStream)) return Buffer.from(got);
  const pieces: Uint8Array[] = [];
  for await (const piece of got) pieces.push(piece);
  return Buffer.concat(pieces);
}

/** A lease that counts what is held, and refuses past `max`. */
function lease(max = Number.POSITIVE_INFINITY): MemoryLease & { held: number; peak: number } {
  const l = {
    held: 0,
    peak: 0,
    reserve(n: number) {
      if (l.held + n > max) return false;
      l.held += n;
      l.peak = Math.max(l.peak, l.held);
      return true;
    },
    free(n: number) {
      l.held -= n;
    },
  };
  return l;
}

const nextTurn = () => new Promise((r) => setImmediate(r));

describe('RangeReader', () => {
  it('learns the size from the first block and fetches neighbouring missing blocks in one request', async () => {
    const { url, client, ranges } = await serve(ranged);
    const r = reader(client, url);
    expect(await r.open()).toBe(file.length);
    expect(await bytesOf(r.read(10, 20))).toEqual(file.subarray(10, 20)); // inside the first block: no request
    expect(await bytesOf(r.read(2 * BLOCK + 5, 5 * BLOCK + 7))).toEqual(file.subarray(2 * BLOCK + 5, 5 * BLOCK + 7));
    expect(await bytesOf(r.read(BLOCK - 3, 3 * BLOCK))).toEqual(file.subarray(BLOCK - 3, 3 * BLOCK)); // block 1 only is new
    expect(ranges).toEqual([`bytes=0-${BLOCK - 1}`, `bytes=${2 * BLOCK}-${6 * BLOCK - 1}`, `bytes=${BLOCK}-${2 * BLOCK - 1}`]);
    expect(r.requests).toBe(3);
    expect(r.fetched).toBe(6 * BLOCK);
  });

  it('reads a part near the end through to the end, in one request', async () => {
    const { url, client, ranges } = await serve(ranged);
    const r = reader(client, url);
    await r.open();
    expect(await bytesOf(r.read(file.length - 2 * BLOCK + 10, file.length - BLOCK))).toEqual(
      file.subarray(file.length - 2 * BLOCK + 10, file.length - BLOCK),
    );
    expect(await bytesOf(r.read(file.length - 50, file.length))).toEqual(file.subarray(file.length - 50));
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
    expect(await bytesOf(r.read(0, 100))).toEqual(file.subarray(0, 100));
  });

  it('asks for twice as much each time a read continues a scan, up to the cap', async () => {
    const { url, client, ranges } = await serve(ranged);
    const r = new RangeReader(client, url, {
      maxBytes: 1 << 20,
      timeoutMs: 5000,
      signal: new AbortController().signal,
      blockBytes: BLOCK,
      maxRunBytes: 4 * BLOCK,
    });
    await r.open();
    for (let at = 0; at < file.length; at += 100)
      expect(await bytesOf(r.read(at, Math.min(at + 100, file.length)))).toEqual(file.subarray(at, at + 100));
    expect(ranges).toEqual([
      `bytes=0-${BLOCK - 1}`,
      `bytes=${BLOCK}-${3 * BLOCK - 1}`,
      `bytes=${3 * BLOCK}-${7 * BLOCK - 1}`,
      `bytes=${7 * BLOCK}-${file.length - 1}`, // the last run reaches the end
    ]);
  });

  it('loads no part over its cap, counts what it holds, drops the least recently read past the held cap, and gives all back on release', async () => {
    const { url, client, ranges } = await serve(ranged);
    const memory = lease();
    const r = new RangeReader(client, url, {
      maxBytes: 1 << 20,
      timeoutMs: 5000,
      signal: new AbortController().signal,
      blockBytes: BLOCK,
      maxPartBytes: 2 * BLOCK,
      maxHeldBytes: 3 * BLOCK,
      memory,
    });
    await r.open();
    expect(memory.held).toBe(BLOCK);
    await expect(r.read(BLOCK, 3 * BLOCK + 1)).rejects.toBeInstanceOf(PartTooLargeError);
    expect(ranges).toHaveLength(1);
    // Two parts across requests come as pieces, never copied into one buffer here.
    expect(await bytesOf(r.read(4 * BLOCK, 6 * BLOCK))).toEqual(file.subarray(4 * BLOCK, 6 * BLOCK));
    expect(await bytesOf(r.read(BLOCK - 10, BLOCK + 10))).toEqual(file.subarray(BLOCK - 10, BLOCK + 10));
    await nextTurn();
    // Blocks 0, 4-5 and 1 fetched, one more than may be kept: block 0 was needed, so 4-5 (read least recently) went.
    expect(memory.held).toBe(2 * BLOCK);
    expect(memory.peak).toBeLessThanOrEqual(3 * BLOCK + 2 * BLOCK);
    await bytesOf(r.read(0, 10));
    expect(ranges).toHaveLength(3);
    await bytesOf(r.read(4 * BLOCK, 4 * BLOCK + 10));
    expect(ranges).toHaveLength(4);
    r.release();
    expect(memory.held).toBe(0);
    await expect(r.read(0, 10)).rejects.toThrow(/released/);
  });

  it('fails a read its lease cannot cover, before asking for it', async () => {
    const { url, client, ranges } = await serve(ranged);
    const memory = lease(2 * BLOCK);
    const r = new RangeReader(client, url, {
      maxBytes: 1 << 20,
      timeoutMs: 5000,
      signal: new AbortController().signal,
      blockBytes: BLOCK,
      memory,
    });
    await r.open();
    await expect(r.read(5 * BLOCK, 7 * BLOCK)).rejects.toBeInstanceOf(MemoryBudgetError);
    expect(ranges).toHaveLength(1);
    r.release();
    await nextTurn();
    expect(memory.held).toBe(0);
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
