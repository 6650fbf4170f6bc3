import { jest } from '@jest/globals';
import { Batcher, type MemberOutcome } from '../../../src/modules/credits/batcher.js';

/** A `send` whose calls the test answers by hand. */
function manualSend() {
  const calls: { items: string[]; answer(outcomes: MemberOutcome<string>[]): void; fail(err: Error): void }[] = [];
  const send = (items: string[]) =>
    new Promise<MemberOutcome<string>[]>((resolve, reject) => calls.push({ items, answer: resolve, fail: reject }));
  return { calls, send };
}
const echo = (items: string[]): MemberOutcome<string>[] => items.map((i) => ({ value: i.toUpperCase() }));
const tick = () => new Promise((r) => setImmediate(r));

describe('Batcher', () => {
  // The windows run on a fake clock the tests move on; promises and setImmediate stay real.
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['setImmediate', 'clearImmediate', 'nextTick', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  it('sends a lone member at once, gathers what arrives while a batch is out, and answers each member on its own', async () => {
    const { calls, send } = manualSend();
    const batcher = new Batcher(send, { windowMs: 1, maxSize: 10, maxInFlight: 1 });
    const a = batcher.submit('a');
    expect(calls.map((c) => c.items)).toEqual([['a']]);
    const rest = ['b', 'c', 'd'].map((x) => batcher.submit(x));
    jest.advanceTimersByTime(20);
    // The window has passed, but the one slot is taken: the next batch keeps growing.
    expect(calls).toHaveLength(1);
    calls[0].answer(echo(calls[0].items));
    expect(await a).toBe('A');
    await tick();
    expect(calls.map((c) => c.items)).toEqual([['a'], ['b', 'c', 'd']]);
    calls[1].answer([{ value: 'B' }, { error: new Error('no credits for c') }, { value: 'D' }]);
    expect(await rest[0]).toBe('B');
    await expect(rest[1]).rejects.toThrow('no credits for c');
    expect(await rest[2]).toBe('D');
  });

  it('sends a full batch without waiting for its window, and a window of its own for what is left', async () => {
    const { calls, send } = manualSend();
    const batcher = new Batcher(send, { windowMs: 10_000, maxSize: 2, maxInFlight: 3 });
    const answers = ['a', 'b', 'c', 'd'].map((x) => batcher.submit(x));
    expect(calls.map((c) => c.items)).toEqual([['a'], ['b', 'c']]);
    calls.forEach((c) => c.answer(echo(c.items)));
    expect(await Promise.all(answers.slice(0, 3))).toEqual(['A', 'B', 'C']);
    // 'd' waits for company (a batch is in flight no more, but it arrived while one was).
    expect(calls).toHaveLength(2);
    batcher.submit('e');
    expect(calls.map((c) => c.items)).toEqual([['a'], ['b', 'c'], ['d', 'e']]);
    calls[2].answer(echo(calls[2].items));
    expect(await answers[3]).toBe('D');
  });

  it('gives every member of a batch the error when the whole batch fails', async () => {
    const { calls, send } = manualSend();
    const batcher = new Batcher(send, { windowMs: 1, maxSize: 10, maxInFlight: 1 });
    const first = batcher.submit('a');
    const second = [batcher.submit('b'), batcher.submit('c')];
    calls[0].answer(echo(calls[0].items));
    await first;
    jest.advanceTimersByTime(20);
    await tick();
    expect(calls.map((c) => c.items)).toEqual([['a'], ['b', 'c']]);
    calls[1].fail(new Error('connection lost'));
    for (const p of second) await expect(p).rejects.toThrow('connection lost');
  });
});
