import { FetchError } from './fetch-error.js';
import type { GuardedHttpClient } from './guarded-client.js';

/** Where a reader's bytes are counted while it holds them (a probe's share of the process's budget). */
export interface MemoryLease {
  /** Takes `bytes` more at once, or answers false when they do not fit; never waits. */
  reserve(bytes: number): boolean;
  free(bytes: number): void;
}

export interface RangeReaderOptions {
  /** Bytes fetched in all, over every request; a read that would pass it fails with FetchError 'too_large'. */
  maxBytes: number;
  /** Ends every request at once (the caller's deadline). */
  signal: AbortSignal;
  /** Time one request may take, body included. */
  timeoutMs: number;
  /** Bytes fetched at least per request, aligned (default 16 KiB: a short clip's moov box, a WebM's header). */
  blockBytes?: number;
  /** Largest part one read may ask for (default maxBytes); a larger one fails with PartTooLargeError before any request. */
  maxPartBytes?: number;
  /** Bytes kept at most between reads (default: all); the least recently read parts go first. */
  maxHeldBytes?: number;
  /** Largest request a sequential scan grows to (default 1 MiB). */
  maxRunBytes?: number;
  /** Where the bytes held are counted; a request it cannot cover fails with MemoryBudgetError. */
  memory?: MemoryLease;
  /** Sent with every request besides its Range (the page as Referer, as its player would send it). */
  headers?: Record<string, string>;
}

/** The server answered the first Range request with the whole of a file larger than a block: it cannot be read in parts. */
export class RangesUnsupportedError extends Error {
  constructor() {
    super('The server ignores Range requests.');
    this.name = 'RangesUnsupportedError';
  }
}

/** A part larger than the reader loads into memory (a box claiming megabytes): a streaming reader may still read it. */
export class PartTooLargeError extends Error {
  constructor(length: number, max: number) {
    super(`A part of ${length} bytes is larger than the ${max} bytes read into memory.`);
    this.name = 'PartTooLargeError';
  }
}

/** The memory the reader is counted against has no room for the part now. */
export class MemoryBudgetError extends Error {
  constructor(bytes: number) {
    super(`No memory left for ${bytes} more bytes of media.`);
    this.name = 'MemoryBudgetError';
  }
}

/** One request's bytes: blocks [from, to) of the file, kept while a read needs them or room allows. */
interface Run {
  from: number;
  to: number;
  bytes: Promise<Buffer>;
  /** Bytes counted against the lease for it (0 once dropped, or once it failed). */
  counted: number;
  /** Reads waiting on it now. */
  pins: number;
  settled: boolean;
  lastUsed: number;
}

const CONTENT_RANGE = /^bytes (\d+)-(\d+)\/(\d+)$/;

/**
 * Reads parts of one URL through the guarded client with Range requests, so the address rules,
 * redirects (re-checked on every request) and deadlines hold for each part. Parts are fetched in
 * aligned blocks, so the many small reads of a container parser cost one request per region of the
 * file; a scan (reads that follow each other) asks for twice as much each time, up to a cap, so a
 * container read from end to end (MPEG-TS) costs tens of requests, not hundreds. The bytes fetched
 * in all are capped, and so is one part; the bytes held are counted against a lease while held, at
 * most `maxHeldBytes` of them are kept between reads, and `release` drops them all at once.
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
  private readonly blocks = new Map<number, Run>();
  private readonly runs = new Set<Run>();
  private held = 0;
  private clock = 0;
  /** Where the last request ended and how long it was: a request starting there continues a scan. */
  private lastRun = { to: -1, length: 0 };
  private readonly stop = new AbortController();
  private readonly signal: AbortSignal;
  private released = false;

  constructor(
    private readonly client: GuardedHttpClient,
    readonly url: string,
    private readonly options: RangeReaderOptions,
  ) {
    this.block = options.blockBytes ?? 16 * 1024;
    // The caller's abort forwarded by hand: AbortSignal.any keeps weak references that only a full collection frees.
    this.signal = this.stop.signal;
    if (options.signal.aborted) this.stop.abort(options.signal.reason);
    else options.signal.addEventListener('abort', this.forward, { once: true });
  }

  private readonly forward = () => this.stop.abort(this.options.signal.reason);

  /** Fetches the first block, which tells the file's size. */
  async open(): Promise<number> {
    const run = this.fetchRun(0, 1);
    run.pins += 1;
    await this.settle([run]);
    return this.size;
  }

  /** The file's bytes [start, end), fetched as needed: one buffer, or a stream of pieces when the part lies across requests (never copied here). */
  async read(start: number, end: number): Promise<Uint8Array | ReadableStream<Uint8Array>> {
    if (this.released) throw new Error('The reader was released.');
    if (start < 0 || end > this.size || end < start) throw new RangeError(`bytes ${start}-${end} lie outside the file's ${this.size}`);
    this.check(start, end);
    const first = Math.floor(start / this.block);
    const last = Math.floor((Math.max(end, start + 1) - 1) / this.block);
    // The parser has a buffer for the part waiting on it, and copies the part into it: counted until it has taken it.
    const handedOver = this.handOver(end - start);
    // The runs holding the part, each kept (pinned) from the moment it is found; neighbouring
    // blocks not yet asked for go in one request.
    const runs: Run[] = [];
    for (let i = first; i <= last; i++) {
      let run = this.blocks.get(i);
      if (!run) {
        let j = i;
        while (j + 1 <= last && !this.blocks.has(j + 1)) j++;
        run = this.fetchRun(i, j - i + 1);
      }
      if (runs.at(-1) !== run) {
        run.pins += 1;
        runs.push(run);
      }
    }
    let buffers: Buffer[];
    try {
      buffers = await this.settle(runs);
    } finally {
      handedOver();
    }
    const pieces = runs.map((run, k) => buffers[k].subarray(Math.max(start, run.from) - run.from, Math.min(end, run.to) - run.from));
    if (pieces.length === 1) return pieces[0];
    return new ReadableStream<Uint8Array>({
      start(controller) {
        for (const piece of pieces) controller.enqueue(piece);
        controller.close();
      },
    });
  }

  /** Throws for a part this reader will not load, before anything is fetched or made room for. */
  check(start: number, end: number): void {
    // A part larger than all that may be fetched (a box claiming gigabytes) fails before any block is counted.
    if (end - start > this.options.maxBytes) throw this.tooLarge();
    const maxPart = this.options.maxPartBytes ?? this.options.maxBytes;
    if (end - start > maxPart) throw new PartTooLargeError(end - start, maxPart);
  }

  /** The bytes already fetched from the start of the file (what is known without another request). */
  async head(): Promise<Buffer> {
    const run = this.blocks.get(0);
    if (!run) return Buffer.alloc(0);
    return (await run.bytes).subarray(0, this.block);
  }

  /** Drops every part held and ends the requests under way: nothing of the file stays reachable from this reader. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.options.signal.removeEventListener('abort', this.forward);
    this.stop.abort(new Error('The reader was released.'));
    for (const run of this.runs) this.drop(run);
    this.blocks.clear();
  }

  /** The pinned runs' bytes; then they are unpinned, and what is past maxHeldBytes is dropped. */
  private async settle(runs: Run[]): Promise<Buffer[]> {
    try {
      return await Promise.all(runs.map((r) => r.bytes));
    } finally {
      const now = ++this.clock;
      for (const run of runs) {
        run.pins -= 1;
        run.lastUsed = now;
      }
      this.shrink(0);
    }
  }

  /**
   * Counts the caller's copy of a part of `length` bytes, from now until the turn after the part is
   * answered (when the caller has taken it): the returned function ends it. Parts under a block are not counted.
   */
  private handOver(length: number): () => void {
    const memory = this.options.memory;
    if (!memory || length < this.block) return () => undefined;
    if (!memory.reserve(length)) throw new MemoryBudgetError(length);
    return () => void setImmediate(() => memory.free(length));
  }

  /** Drops the least recently read runs nobody waits on until `incoming` more bytes fit under maxHeldBytes. */
  private shrink(incoming: number): void {
    const max = this.options.maxHeldBytes ?? Number.POSITIVE_INFINITY;
    if (this.held + incoming <= max) return;
    const idle = [...this.runs].filter((r) => r.pins === 0 && r.settled).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const run of idle) {
      if (this.held + incoming <= max) break;
      this.drop(run);
      for (let i = Math.floor(run.from / this.block); i * this.block < run.to; i++) if (this.blocks.get(i) === run) this.blocks.delete(i);
    }
  }

  private drop(run: Run): void {
    this.runs.delete(run);
    if (!run.counted) return;
    this.held -= run.counted;
    this.options.memory?.free(run.counted);
    run.counted = 0;
  }

  /** Asks for `count` blocks from block `index` in one request (more when it continues a scan), as one run. */
  private fetchRun(index: number, count: number): Run {
    const from = index * this.block;
    const missing = (k: number) => (index + k) * this.block < this.size && !this.blocks.has(index + k);
    // A scan: each request that continues the last one asks for twice as much, up to the cap.
    if (this.size && from === this.lastRun.to) {
      const want = Math.min(2 * this.lastRun.length, this.options.maxRunBytes ?? 1024 * 1024);
      while ((count + 1) * this.block <= want && missing(count)) count++;
    }
    // A run that ends less than a block before the end goes to the end: an index there (a moov box, cues) is read whole.
    if (this.size && (index + count + 1) * this.block >= this.size) {
      while (missing(count)) count++;
    }
    // Before the size is known (the first request), ask for one block and learn it from Content-Range.
    const to = this.size ? Math.min((index + count) * this.block, this.size) : this.block;
    this.lastRun = { to, length: to - from };
    const run: Run = { from, to, bytes: Promise.resolve(Buffer.alloc(0)), counted: 0, pins: 0, settled: false, lastUsed: ++this.clock };
    run.bytes = this.fetchCounted(run);
    run.bytes.then(
      () => {
        run.settled = true;
      },
      () => {
        run.settled = true;
        this.drop(run); // a failed request holds nothing; its blocks keep the failure for whoever reads them
      },
    );
    for (let k = 0; k < count; k++) this.blocks.set(index + k, run);
    this.runs.add(run);
    return run;
  }

  /** The run's request, its bytes counted before it is made. */
  private async fetchCounted(run: Run): Promise<Buffer> {
    const length = run.to - run.from;
    if (this.asked + length > this.options.maxBytes) throw this.tooLarge();
    this.shrink(length);
    if (this.options.memory && !this.options.memory.reserve(length)) throw new MemoryBudgetError(length);
    run.counted = length;
    this.held += length;
    const body = await this.fetchRange(run.from, run.to);
    // The first answer may be shorter than asked (a file smaller than a block): only what came is held.
    if (this.runs.has(run) && body.length < run.counted) {
      const extra = run.counted - body.length;
      run.counted -= extra;
      this.held -= extra;
      this.options.memory?.free(extra);
    }
    return body;
  }

  private tooLarge(): FetchError {
    return new FetchError('too_large', `Reading the media would pass the ${this.options.maxBytes} bytes allowed.`);
  }

  private async fetchRange(from: number, to: number): Promise<Buffer> {
    const length = to - from;
    this.asked += length;
    this.requests += 1;
    const first = !this.size;
    const res = await this.client
      .request(this.url, {
        headers: { ...this.options.headers, range: `bytes=${from}-${to - 1}` },
        signal: this.signal,
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
