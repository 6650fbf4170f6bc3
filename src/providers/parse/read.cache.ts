import { LRUCache } from 'lru-cache';

export interface ReadCacheOptions {
  /** How long an answer is reused. */
  ttlMs: number;
  /** Answers kept at most (least recently used go first). */
  maxEntries: number;
  /** Time one read may take, from its start, whoever waits on it. */
  timeoutMs: number;
  /** Told each time an answer is reused instead of read: kept, or joined while being read. */
  onReuse?: (how: 'cache' | 'in_flight') => void;
  /** The clock answers age by, in milliseconds (tests move it; default performance.now). */
  now?: () => number;
}

/** One read being made, and how many wait on it. */
interface Flight<T> {
  controller: AbortController;
  waiters: number;
  result: Promise<T>;
}

/**
 * Reads made once per key: callers asking for the same key at the same time share one read, and
 * its answer is kept for a short while (bounded, least recently used first). A read runs under its
 * own deadline, not any one caller's: a caller that gives up leaves it to the others, and only when
 * every caller has left is it abandoned (and its answer not kept).
 */
export class ReadCache<T extends object | null> {
  private readonly kept: LRUCache<string, { value: T }>;
  private readonly flights = new Map<string, Flight<T>>();

  constructor(private readonly options: ReadCacheOptions) {
    this.kept = new LRUCache({
      max: options.maxEntries,
      ttl: options.ttlMs,
      ...(options.now && { perf: { now: options.now }, ttlResolution: 0 }),
    });
  }

  /** The answer for `key`: kept, being read, or read now by `read` (whose signal ends at the deadline or when every caller has left). */
  get(key: string, read: (signal: AbortSignal) => Promise<T>, signal: AbortSignal): Promise<T> {
    signal.throwIfAborted();
    const kept = this.kept.get(key);
    if (kept) {
      this.options.onReuse?.('cache');
      return Promise.resolve(kept.value);
    }
    let flight = this.flights.get(key);
    if (flight) this.options.onReuse?.('in_flight');
    else flight = this.start(key, read);
    return this.join(key, flight, signal);
  }

  private start(key: string, read: (signal: AbortSignal) => Promise<T>): Flight<T> {
    const controller = new AbortController();
    // A timer cleared at the end rather than AbortSignal.timeout, which stays armed (and referenced) for its whole span.
    const timer = setTimeout(
      () => controller.abort(new DOMException(`No answer within ${this.options.timeoutMs} ms.`, 'TimeoutError')),
      this.options.timeoutMs,
    ).unref();
    const flight: Flight<T> = { controller, waiters: 0, result: read(controller.signal) };
    this.flights.set(key, flight);
    const settle = () => {
      clearTimeout(timer);
      if (this.flights.get(key) === flight) this.flights.delete(key);
    };
    flight.result.then((value) => {
      settle();
      // Abandoned by every caller: what it answered is not the file's answer.
      if (flight.waiters > 0 || !controller.signal.aborted) this.kept.set(key, { value });
    }, settle);
    return flight;
  }

  private join(key: string, flight: Flight<T>, signal: AbortSignal): Promise<T> {
    flight.waiters += 1;
    return new Promise<T>((resolve, reject) => {
      let left = false;
      const leave = () => {
        if (left) return false;
        left = true;
        flight.waiters -= 1;
        signal.removeEventListener('abort', onAbort);
        return true;
      };
      const onAbort = () => {
        if (!leave()) return;
        if (flight.waiters === 0) {
          // Nobody waits any more: the read stops, and whoever asks next starts afresh.
          if (this.flights.get(key) === flight) this.flights.delete(key);
          flight.controller.abort(signal.reason);
        }
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      flight.result.then(
        (value) => leave() && resolve(value),
        (err: unknown) => leave() && reject(err),
      );
    });
  }
}
