import { inspect } from 'node:util';

export interface WaitForOptions {
  /** How long to keep asking, in ms (default 10 s). */
  timeout?: number;
  /** The pause between two asks, in ms (default 25). */
  interval?: number;
  /** What is awaited, for the failure message ("the job to succeed"). */
  describe?: string;
}

type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

/**
 * Asks `condition` until it answers something truthy, and returns that answer. A condition that
 * throws (an `expect` not met yet, or an error that says what it saw) counts as "not yet". When time runs out it fails loudly, with
 * what it waited for and what it last saw (the last answer, or the last error), so a test that
 * waited in vain says why instead of moving on or timing out in silence.
 */
export async function waitFor<T>(condition: () => T | Promise<T>, options: WaitForOptions = {}): Promise<Truthy<T>> {
  const { timeout = 10_000, interval = 25, describe = 'a condition' } = options;
  const started = Date.now();
  let asks = 0;
  let last: { value: unknown } | { error: unknown } = { value: undefined };
  for (;;) {
    asks++;
    try {
      const value = await condition();
      if (value) return value as Truthy<T>;
      last = { value };
    } catch (error) {
      last = { error };
    }
    if (Date.now() - started >= timeout) {
      const seen =
        'error' in last
          ? `its last error: ${last.error instanceof Error ? `${last.error.name}: ${last.error.message}` : inspect(last.error)}`
          : `its last answer: ${inspect(last.value, { depth: 4, breakLength: Infinity })}`;
      throw new Error(`waitFor: ${describe} did not happen within ${timeout} ms (${asks} asks); ${seen}`);
    }
    // A pause on the timer queue: it lets I/O (sockets, the database) move between two asks.
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

/**
 * Waits until the clock is two milliseconds on, so that the next row a test makes has a creation
 * time of its own: created_at is kept to the millisecond (rounded), and rows of one millisecond are
 * ordered by id, which for jobs (random uuids) is not the order they were made in.
 */
export function nextMillisecond(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 2));
}
