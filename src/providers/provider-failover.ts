import { AppError, ProviderError, isAppError, type ErrorCode } from '../errors.js';
import type { CircuitBreakers } from './circuit-breakers.js';

/** How a provider's failure reads to a caller, most telling first. */
const PRECEDENCE: Array<[ProviderError['kind'], ErrorCode]> = [
  ['unavailable_content', 'CONTENT_UNAVAILABLE'],
  ['too_large', 'INVALID_INPUT'],
  ['failed', 'PROVIDER_ERROR'],
  ['timeout', 'PROVIDER_TIMEOUT'],
  ['no_media', 'NO_MEDIA_FOUND'],
  ['circuit_open', 'PROVIDER_UNAVAILABLE'],
];

const MESSAGES: Partial<Record<ErrorCode, string>> = {
  NO_MEDIA_FOUND: 'No media could be found at this URL.',
  CONTENT_UNAVAILABLE: 'The media exists but cannot be retrieved (private, removed, restricted or live).',
  PROVIDER_ERROR: 'Every configured provider failed.',
  PROVIDER_TIMEOUT: 'The providers did not answer in time.',
  INVALID_INPUT: 'The media is larger than the service accepts.',
  PROVIDER_UNAVAILABLE: 'Every provider is paused after repeated failures; try again shortly.',
};

export interface FailoverLog {
  warn(obj: object, msg: string): void;
}

/**
 * Runs `attempt` on each provider in the configured order; the first success wins. A refused URL or
 * the caller's abort stops at once; otherwise the callers sees one error chosen from what every
 * provider said, never an upstream's own text.
 */
export async function runWithFailover<P extends { name: string }, R>(
  providers: readonly P[],
  signal: AbortSignal,
  log: FailoverLog,
  attempt: (provider: P) => Promise<R>,
  breakers?: CircuitBreakers,
): Promise<{ provider: string; result: R }> {
  if (providers.length === 0) throw new AppError('PROVIDER_UNAVAILABLE', 'No provider is configured for this operation.');
  const kinds = new Set<ProviderError['kind']>();
  // What each provider did, in our words only: callers may see it, so no upstream text goes in.
  const attempts: Array<{ provider: string; outcome: ProviderError['kind']; reason?: string }> = [];
  let lastNoMediaMessage: string | null = null;
  for (const provider of providers) {
    if (signal.aborted) break;
    try {
      const result = breakers ? await breakers.run(provider.name, () => attempt(provider)) : await attempt(provider);
      return { provider: provider.name, result };
    } catch (err) {
      if (signal.aborted) break;
      if (isAppError(err)) throw err;
      if (err instanceof ProviderError) {
        kinds.add(err.kind);
        attempts.push({ provider: provider.name, outcome: err.kind, ...(err.reason ? { reason: err.reason } : {}) });
        if (err.kind === 'no_media') lastNoMediaMessage = err.message;
        log.warn({ provider: provider.name, kind: err.kind, reason: err.message }, 'provider failed');
      } else {
        kinds.add('failed');
        attempts.push({ provider: provider.name, outcome: 'failed' });
        log.warn({ provider: provider.name, err }, 'provider crashed');
      }
    }
  }
  if (signal.aborted) throw new AppError('PROVIDER_TIMEOUT', MESSAGES.PROVIDER_TIMEOUT);
  for (const [kind, code] of PRECEDENCE) {
    if (!kinds.has(kind)) continue;
    // "No media" messages are ours (the selection rules), so they may reach the caller.
    if (code === 'NO_MEDIA_FOUND' && lastNoMediaMessage) throw new AppError(code, lastNoMediaMessage, { attempts });
    throw new AppError(code, withReasons(MESSAGES[code]!, attempts), { attempts });
  }
  throw new AppError('PROVIDER_ERROR', withReasons(MESSAGES.PROVIDER_ERROR!, attempts), { attempts });
}

/** "Every configured provider failed. builtin: the page could not be fetched (the server answered 503)." */
function withReasons(message: string, attempts: ReadonlyArray<{ provider: string; reason?: string }>): string {
  const reasons = attempts.filter((a) => a.reason).map((a) => `${a.provider}: ${a.reason}`);
  return reasons.length ? `${message} ${reasons.join('; ')}.` : message;
}
