import { waitFor } from '../support/wait-for.js';

describe('waitFor', () => {
  it('returns the first truthy answer of the condition', async () => {
    let asks = 0;
    await expect(waitFor(() => ++asks >= 3 && `ask ${asks}`, { interval: 1 })).resolves.toBe('ask 3');
  });

  it('fails loudly, naming what it waited for and its last answer or its last error (a throwing condition is asked again)', async () => {
    let asks = 0;
    const answered = waitFor(() => ++asks < 0, { timeout: 50, interval: 5, describe: 'the job to succeed' });
    await expect(answered).rejects.toThrow(
      /^waitFor: the job to succeed did not happen within 50 ms \(\d+ asks\); its last answer: false$/,
    );
    const thrown = waitFor(
      () => {
        throw new Error(`status was RUNNING (ask ${++asks})`);
      },
      { timeout: 30, interval: 5 },
    );
    await expect(thrown).rejects.toThrow(
      /^waitFor: a condition did not happen within 30 ms \(\d+ asks\); its last error: Error: status was RUNNING \(ask \d+\)/,
    );
  });

  it('shows the last value the condition answered', async () => {
    await expect(waitFor(async () => 0 as number, { timeout: 20, interval: 5, describe: 'rows' })).rejects.toThrow(/its last answer: 0$/);
    await expect(waitFor(() => null, { timeout: 20, interval: 5 })).rejects.toThrow(/its last answer: null$/);
  });
});
