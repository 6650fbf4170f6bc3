import CircuitBreaker from 'opossum';
import { ProviderError, isAppError } from '../errors.js';

export interface BreakerOptions {
  /**
   * The providers that are remote services. builtin and local fail mostly because of the page or
   * file at hand, so a circuit over them would let one hostile URL pause them for everyone.
   */
  guard?: readonly string[];
  /** Failures (in percent of calls within the window) that open a provider's circuit. */
  errorThresholdPercentage?: number;
  /** Calls needed in the window before the percentage counts. */
  volumeThreshold?: number;
  /** How long an open circuit waits before letting one trial call through. */
  resetTimeoutMs?: number;
  /** The rolling window. */
  windowMs?: number;
}

/** Providers that are services of their own, and so have a health worth watching. */
export const REMOTE_PROVIDERS = ['cobalt', 'openai', 'deepgram', 'assemblyai'];

/**
 * One circuit per provider (opossum): a provider that keeps failing is skipped for a while, so
 * failover goes straight to the next instead of waiting on a dead upstream every time. Only the
 * provider's own failures count; "no media here" or "private video" say nothing about its health.
 */
export class CircuitBreakers {
  private readonly breakers = new Map<string, CircuitBreaker<[() => Promise<unknown>], unknown>>();

  constructor(private readonly options: BreakerOptions = {}) {}

  async run<T>(provider: string, call: () => Promise<T>): Promise<T> {
    if (!(this.options.guard ?? REMOTE_PROVIDERS).includes(provider)) return call();
    try {
      return (await this.breaker(provider).fire(call)) as T;
    } catch (err) {
      if ((err as { code?: string }).code === 'EOPENBREAKER') {
        throw new ProviderError(provider, 'circuit_open', `${provider} is paused after repeated failures`);
      }
      throw err;
    }
  }

  /** Whether a provider's circuit is open now (for tests and health reporting). */
  isOpen(provider: string): boolean {
    return this.breakers.get(provider)?.opened ?? false;
  }

  shutdown(): void {
    for (const b of this.breakers.values()) b.shutdown();
  }

  private breaker(provider: string) {
    let b = this.breakers.get(provider);
    if (!b) {
      b = new CircuitBreaker((call: () => Promise<unknown>) => call(), {
        // Deadlines are the task runner's; the breaker only counts outcomes.
        timeout: false,
        errorThresholdPercentage: this.options.errorThresholdPercentage ?? 50,
        volumeThreshold: this.options.volumeThreshold ?? 5,
        resetTimeout: this.options.resetTimeoutMs ?? 30_000,
        rollingCountTimeout: this.options.windowMs ?? 60_000,
        // true = not a failure of the provider.
        errorFilter: (err: unknown) =>
          isAppError(err) ||
          (err instanceof ProviderError && (err.kind === 'no_media' || err.kind === 'unavailable_content' || err.kind === 'too_large')),
      });
      this.breakers.set(provider, b);
    }
    return b;
  }
}
