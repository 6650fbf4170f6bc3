import { AppError } from '../../errors.js';
import { BudgetBooks, LeasedBytes } from '../../net/budget-books.js';

export interface TempBudgetLimits {
  /** Bytes all transcriptions of the process may have in the temporary directory at once. */
  maxBytes: number;
  /** Downloads running at once. */
  maxDownloads: number;
}

/** What the budget holds now, and the most bytes it ever held. */
export interface TempBudgetState {
  bytes: number;
  peakBytes: number;
  downloads: number;
  waiting: number;
}

/** Seconds a refused caller is told to wait: about as long as a short download and its audio take. */
export const TEMP_RETRY_AFTER_SECONDS = 5;

/** The refusal of a synchronous transcription when the temporary disk or the downloads are taken. */
export const tempDiskBusy = (): AppError =>
  new AppError(
    'PROVIDER_UNAVAILABLE',
    `The gateway is preparing as much media as its temporary disk allows; retry in ${TEMP_RETRY_AFTER_SECONDS} s.`,
    { retryAfterSeconds: TEMP_RETRY_AFTER_SECONDS },
  );

/** The slot a download holds besides its bytes; audio being written holds bytes only. */
const slot = (download: boolean) => (download ? 'downloads' : undefined);

interface Waiter {
  bytes: number;
  download: boolean;
  grant: () => void;
}

/**
 * What the transcriptions of one process may have on the temporary disk: bytes (a download reserves
 * its known length, or MEDIA_MAX_BYTES, before its first byte is written; prepared audio as it grows)
 * and downloads at once. A caller who waits (a queued job) is served in order of arrival; one who
 * does not (a synchronous request) is refused at once. Bytes never pass `maxBytes`.
 */
export class TempBudget {
  private readonly books: BudgetBooks<'downloads'>;
  private readonly queue: Waiter[] = [];

  constructor(readonly limits: TempBudgetLimits) {
    this.books = new BudgetBooks(limits.maxBytes, { downloads: limits.maxDownloads });
  }

  lease(): TempLease {
    return new TempLease(this);
  }

  snapshot(): TempBudgetState {
    const { bytes, peakBytes } = this.books;
    return { bytes, peakBytes, downloads: this.books.taken('downloads'), waiting: this.queue.length };
  }

  /** @internal Takes the bytes (and a download slot) now if they fit and nobody waits before. */
  tryTake(bytes: number, download: boolean): boolean {
    if (this.queue.length || !this.books.fits(bytes, slot(download))) return false;
    this.books.take(bytes, slot(download));
    return true;
  }

  /** @internal Waits in line for the bytes (and a download slot); rejects if `signal` aborts first. */
  waitFor(bytes: number, download: boolean, signal: AbortSignal): Promise<void> {
    if (bytes > this.limits.maxBytes) return Promise.reject(tempDiskBusy());
    if (this.tryTake(bytes, download)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        bytes,
        download,
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.queue.splice(this.queue.indexOf(waiter), 1);
        reject(signal.reason);
        this.serve();
      };
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  /** @internal Grows what one lease holds, for audio being written: never waits, never past the budget. */
  tryGrow(bytes: number): boolean {
    if (!this.books.fits(bytes)) return false;
    this.books.take(bytes);
    return true;
  }

  /** @internal */
  give(bytes: number, download: boolean): void {
    this.books.give(bytes, slot(download));
    this.serve();
  }

  /** Lets the waiters in, first come first served: the first that does not fit holds the others back. */
  private serve(): void {
    while (this.queue.length && this.books.fits(this.queue[0].bytes, slot(this.queue[0].download))) {
      const next = this.queue.shift()!;
      this.books.take(next.bytes, slot(next.download));
      next.grant();
    }
  }
}

/**
 * One transcription's share: a download slot while it downloads, and the bytes it may write. `end`
 * gives everything back, so a task that fails half-way leaks nothing.
 */
export class TempLease {
  private readonly held = new LeasedBytes();
  private downloading = false;

  constructor(private readonly budget: TempBudget) {}

  /** A download slot and `bytes` for its file: at once or refused (`signal` null), or in line until they free. */
  async startDownload(bytes: number, signal: AbortSignal | null): Promise<void> {
    if (this.held.ended || this.downloading) throw new Error('a lease downloads once');
    if (signal) await this.budget.waitFor(bytes, true, signal);
    else if (!this.budget.tryTake(bytes, true)) throw tempDiskBusy();
    this.held.add(bytes);
    this.downloading = true;
  }

  /** The download ended: its slot is given back, and of its bytes only `kept` (the file's size) stay held. */
  endDownload(kept: number): void {
    if (!this.downloading) return;
    this.downloading = false;
    this.budget.give(this.held.release(this.held.bytes - kept), true);
  }

  /** `bytes` more for a file being written, if they fit now. */
  grow(bytes: number): boolean {
    if (this.held.ended || !this.budget.tryGrow(bytes)) return false;
    this.held.add(bytes);
    return true;
  }

  /** A file of `bytes` was removed. */
  free(bytes: number): void {
    const given = this.held.release(bytes);
    if (given) this.budget.give(given, false);
  }

  get bytes(): number {
    return this.held.bytes;
  }

  end(): void {
    const held = this.held.end();
    if (held === null) return;
    const download = this.downloading;
    this.downloading = false;
    this.budget.give(held, download);
  }
}
