import { FetchError } from './fetch-error.js';
import type { GuardedHttpClient } from './guarded-client.js';

export interface RangeReaderOptions {
  /** Bytes fetched in all, over every request; a read that would pass it fails with FetchError 'too_large'. */
  maxBytes: number;
  /** Ends every request at once (the caller's deadline). */
  signal: AbortSignal;
  /** Time one request may take, body included. */
  timeoutMs: number;
  /** Bytes fetched at least per request, aligned (default 16 KiB: a short clip's moov box, a WebM's header). */
  blockBytes?: number;
}

/** The server answered the first Range request with the whole of a file larger than a block: it cannot be read in parts. */
export class RangesUnsupportedError extends Error {
  constructor() {
    super('The server ignores Range requests.');
    this.name = 'RangesUnsupportedError';
  }
}

const CONTENT_RANGE = /^bytes (\d+)-(\d+)\/(\d+)$/;

/**
 * Reads parts of one URL through the guarded client with Range requests, so the address rules,
 * redirects (re-checked on every request) and deadlines hold for each part. Parts are fetched in
 * aligned blocks, kept for the reader's life, so the many small reads of a container parser cost
 * one request per region of the file; the bytes fetched in all are capped.
 */
export class RangeReader {
  /** The file's size, known once `open` has resolved. */
  size = 0;
  /** Bytes fetched so far, and requests made. */
  fetched = 0;
  requests = 0;
  /** Bytes asked for so far (requests under way included): what the cap is checked against. */
  private asked = 0;
  private readonly block: number;
  private readonly blocks = new Map<number, Promise<Buffer>>();

  constructor(
    private readonly client: GuardedHttpClient,
    readonly url: string,
    private readonly options: RangeReaderOptions,
  ) {
    this.block = options.blockBytes ?? 16 * 1024;
  }

  /** Fetches the first block, which tells the file's size. */
  async open(): Promise<number> {
    await this.fetchRun(0, 1);
    return this.size;
  }

  /** The file's bytes [start, end), fetched as needed. */
  async read(start: number, end: number): Promise<Uint8Array> {
    if (start < 0 || end > this.size || end < start) throw new RangeError(`bytes ${start}-${end} lie outside the file's ${this.size}`);
    // A part larger than all that may be fetched (a box claiming gigabytes) fails before any block is counted.
    if (end - start > this.options.maxBytes) throw this.tooLarge();
    const first = Math.floor(start / this.block);
    const last = Math.floor((Math.max(end, start + 1) - 1) / this.block);
    // Neighbouring blocks not yet asked for go in one request.
    for (let i = first; i <= last; i++) {
      if (this.blocks.has(i)) continue;
      let j = i;
      while (j + 1 <= last && !this.blocks.has(j + 1)) j++;
      void this.fetchRun(i, j - i + 1).catch(() => undefined); // each block's promise carries the failure
      i = j;
    }
    const parts = await Promise.all(Array.from({ length: last - first + 1 }, (_, k) => this.blocks.get(first + k)!));
    const joined = parts.length === 1 ? parts[0] : Buffer.concat(parts);
    const offset = first * this.block;
    return joined.subarray(start - offset, end - offset);
  }

  /** The bytes already fetched from the start of the file (what is known without another request). */
  async head(): Promise<Buffer> {
    return (await this.blocks.get(0)) ?? Buffer.alloc(0);
  }

  /** Asks for `count` blocks from block `index` in one request; each block's promise settles with it. */
  private fetchRun(index: number, count: number): Promise<Buffer> {
    const from = index * this.block;
    // A run that ends less than a block before the end goes to the end: an index there (a moov box, cues) is read whole.
    if (this.size && (index + count + 1) * this.block >= this.size) {
      while ((index + count) * this.block < this.size && !this.blocks.has(index + count)) count++;
    }
    // Before the size is known (the first request), ask for one block and learn it from Content-Range.
    const to = this.size ? Math.min((index + count) * this.block, this.size) : this.block;
    const run = this.fetchRange(from, to);
    for (let k = 0; k < count; k++) {
      const at = (index + k) * this.block - from;
      const part = run.then((bytes) => bytes.subarray(at, at + this.block));
      part.catch(() => undefined); // a block nobody awaits must not become an unhandled rejection
      this.blocks.set(index + k, part);
    }
    return run;
  }

  private tooLarge(): FetchError {
    return new FetchError('too_large', `Reading the media would pass the ${this.options.maxBytes} bytes allowed.`);
  }

  private async fetchRange(from: number, to: number): Promise<Buffer> {
    const length = to - from;
    if (this.asked + length > this.options.maxBytes) throw this.tooLarge();
    this.asked += length;
    this.requests += 1;
    const first = !this.size;
    const res = await this.client
      .request(this.url, {
        headers: { range: `bytes=${from}-${to - 1}` },
        signal: this.options.signal,
        timeoutMs: this.options.timeoutMs,
        // A server may send the whole file instead of the part: never more than the part is read.
        maxBytes: length,
      })
      .catch((err: unknown) => {
        if (first && err instanceof FetchError && err.kind === 'too_large') throw new RangesUnsupportedError();
        throw err;
      });
    this.fetched += res.body.length;
    if (res.status === 206) {
      const range = CONTENT_RANGE.exec(res.headers['content-range'] ?? '');
      const total = Number(range?.[3]);
      if (first && range) this.size = total;
      const expected = Math.min(to, this.size) - from;
      if (
        !range ||
        Number(range[1]) !== from ||
        total !== this.size ||
        res.body.length !== expected ||
        Number(range[2]) !== from + expected - 1
      ) {
        throw new FetchError('network', 'The server answered a different part than the one asked for.');
      }
      return res.body;
    }
    // A whole file in answer to the first request: as good as a range when it fits in one block.
    if (res.status === 200 && first && from === 0) {
      this.size = res.body.length;
      return res.body;
    }
    throw new RangesUnsupportedError();
  }
}
