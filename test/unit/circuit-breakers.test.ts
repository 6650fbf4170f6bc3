import { AppError, ProviderError } from '../../src/errors.js';
import { CircuitBreakers } from '../../src/providers/circuit-breakers.js';
import { runWithFailover } from '../../src/providers/provider-failover.js';

const log = { warn: () => {} };
const signal = () => new AbortController().signal;

describe('circuit breakers in failover', () => {
  it('stops calling a remote provider that keeps failing, fails over, and says 503 when every circuit is open', async () => {
    const breakers = new CircuitBreakers({ volumeThreshold: 3, errorThresholdPercentage: 50, resetTimeoutMs: 60_000 });
    let openaiCalls = 0;
    const providers = [{ name: 'openai' }];
    const failing = async () => {
      openaiCalls++;
      throw new ProviderError('openai', 'failed', 'HTTP 500');
    };
    for (let i = 0; i < 3; i++) {
      await expect(runWithFailover(providers, signal(), log, failing, breakers)).rejects.toMatchObject({ code: 'PROVIDER_ERROR' });
    }
    expect(breakers.isOpen('openai')).toBe(true);
    await expect(runWithFailover(providers, signal(), log, failing, breakers)).rejects.toMatchObject({
      code: 'PROVIDER_UNAVAILABLE',
      details: { attempts: [{ provider: 'openai', outcome: 'circuit_open' }] },
    });
    expect(openaiCalls).toBe(3);
    // With a second provider, the open circuit is skipped and the next one serves.
    const both = [{ name: 'openai' }, { name: 'deepgram' }];
    const out = await runWithFailover(both, signal(), log, async (p) => (p.name === 'deepgram' ? 'ok' : failing()), breakers);
    expect(out).toEqual({ provider: 'deepgram', result: 'ok' });
    expect(openaiCalls).toBe(3);
    breakers.shutdown();
  });

  it('does not count the content’s fault against a provider, and never guards the local ones', async () => {
    const breakers = new CircuitBreakers({ volumeThreshold: 2, errorThresholdPercentage: 1 });
    for (let i = 0; i < 5; i++) {
      await expect(
        runWithFailover(
          [{ name: 'cobalt' }],
          signal(),
          log,
          async () => {
            throw new ProviderError('cobalt', i % 2 ? 'no_media' : 'unavailable_content', 'x');
          },
          breakers,
        ),
      ).rejects.toBeInstanceOf(AppError);
      await expect(
        runWithFailover(
          [{ name: 'builtin' }],
          signal(),
          log,
          async () => {
            throw new ProviderError('builtin', 'failed', 'page answered 500');
          },
          breakers,
        ),
      ).rejects.toMatchObject({ code: 'PROVIDER_ERROR' });
    }
    expect(breakers.isOpen('cobalt')).toBe(false);
    expect(breakers.isOpen('builtin')).toBe(false);
    breakers.shutdown();
  });
});
