import { ReadCache } from '../../../src/providers/parse/read.cache.js';

/** A read the test finishes by hand, recording the signal it was given. */
function manualRead<T>() {
  const calls: { signal: AbortSignal; finish: (value: T) => void }[] = [];
  const read = (signal: AbortSignal) =>
    new Promise<T>((resolve) => {
      calls.push({ signal, finish: resolve });
      // A read that honours its signal answers at once when it is aborted.
      signal.addEventListener('abort', () => resolve(null as T), { once: true });
    });
  return { read, calls };
}

const options = (extra: Partial<ConstructorParameters<typeof ReadCache>[0]> = {}) => ({
  ttlMs: 60_000,
  maxEntries: 100,
  timeoutMs: 10_000,
  ...extra,
});

describe('ReadCache', () => {
  it('shares one read among the callers of one key, keeps its answer, and reads again once it is old', async () => {
    let clock = 5000; // lru-cache takes a start of 0 for no start at all
    const reuses: string[] = [];
    const cache = new ReadCache<{ n: number } | null>(options({ ttlMs: 1000, now: () => clock, onReuse: (how) => reuses.push(how) }));
    const { read, calls } = manualRead<{ n: number }>();
    const waiting = [1, 2, 3].map(() => cache.get('a', read, new AbortController().signal));
    expect(calls).toHaveLength(1);
    calls[0].finish({ n: 1 });
    expect(await Promise.all(waiting)).toEqual([{ n: 1 }, { n: 1 }, { n: 1 }]);
    expect(await cache.get('a', read, new AbortController().signal)).toEqual({ n: 1 });
    expect(calls).toHaveLength(1);
    expect(reuses).toEqual(['in_flight', 'in_flight', 'cache']);
    clock += 1001;
    const again = cache.get('a', read, new AbortController().signal);
    expect(calls).toHaveLength(2);
    calls[1].finish({ n: 2 });
    expect(await again).toEqual({ n: 2 });
  });

  it('keeps reading for the others when one caller gives up, and stops only when all have', async () => {
    const cache = new ReadCache<{ n: number } | null>(options());
    const { read, calls } = manualRead<{ n: number }>();
    const [first, second] = [new AbortController(), new AbortController()];
    const a = cache.get('k', read, first.signal);
    const b = cache.get('k', read, second.signal);
    first.abort(new Error('first gave up'));
    await expect(a).rejects.toThrow('first gave up');
    expect(calls[0].signal.aborted).toBe(false);
    second.abort(new Error('second gave up'));
    await expect(b).rejects.toThrow('second gave up');
    expect(calls[0].signal.aborted).toBe(true);
    // Abandoned: not kept, and the next caller reads afresh.
    const c = cache.get('k', read, new AbortController().signal);
    expect(calls).toHaveLength(2);
    calls[1].finish({ n: 3 });
    expect(await c).toEqual({ n: 3 });
  });

  it('ends a read at its own deadline, whoever waits, and keeps what it answered', async () => {
    const cache = new ReadCache<{ n: number } | null>(options({ timeoutMs: 20 }));
    const { read, calls } = manualRead<{ n: number } | null>();
    expect(await cache.get('slow', read, new AbortController().signal)).toBeNull();
    expect(calls[0].signal.reason).toMatchObject({ name: 'TimeoutError' });
    expect(await cache.get('slow', read, new AbortController().signal)).toBeNull();
    expect(calls).toHaveLength(1);
  });

  it('keeps at most maxEntries answers, the least recently used going first', async () => {
    const cache = new ReadCache<{ n: number } | null>(options({ maxEntries: 2 }));
    let reads = 0;
    const read = async () => ({ n: ++reads });
    const signal = new AbortController().signal;
    for (const key of ['a', 'b', 'a', 'c', 'a', 'b']) await cache.get(key, read, signal);
    expect(reads).toBe(4); // a, b, c, then b again (evicted by c); a stayed in use
  });
});
