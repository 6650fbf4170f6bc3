import { z } from 'zod';
import type { Config } from '../../config.js';
import { AppError } from '../../errors.js';
import type { GuardedHttpClient } from '../../net/guarded-client.js';
import type { CircuitBreakers } from '../../providers/circuit-breakers.js';
import { runWithFailover, type FailoverLog } from '../../providers/provider-failover.js';
import {
  PARSE_MODES,
  PARSE_QUALITIES,
  type ParseMode,
  type ParseProvider,
  type ParseQuality,
  type ParseResult,
} from '../../providers/parse/parse.types.js';
import { parsePolicy } from './parse.policy.js';
import type { Principal } from '../api-keys/api-key.service.js';
import { idempotencyFor } from '../tasks/idempotency.js';
import { successBody } from '../jobs/job.result.js';
import type { TaskRunner } from '../tasks/task-runner.js';
import { dropNulls, httpUrl, validate } from '../validation.js';
import type { ParseResponseBody } from '../../types/contract/parse.js';

/** The parse request as the contract spells it. */
export const parseInputSchema = z.strictObject({
  url: httpUrl,
  mode: z.enum(PARSE_MODES, { error: `must be one of ${PARSE_MODES.join(', ')}` }).optional(),
  quality: z.enum(PARSE_QUALITIES, { error: `must be one of ${PARSE_QUALITIES.join(', ')}` }).optional(),
});

/** Members get the advanced formats. */

/** The success body of a parse, on both doors: the contract's. */
export type ParseResponse = ParseResponseBody;

export class ParseService {
  constructor(
    private readonly deps: {
      config: Config;
      runner: TaskRunner;
      providers: readonly ParseProvider[];
      client: GuardedHttpClient;
      log: FailoverLog;
      breakers?: CircuitBreakers;
    },
  ) {}

  async parse(principal: Principal, rawInput: unknown, options: { idempotencyKey?: string | null } = {}): Promise<ParseResponse> {
    parsePolicy.start(principal);
    const input = validate(parseInputSchema, dropNulls(rawInput as object));
    const quality = parsePolicy.quality(principal, input.quality);
    const mode = input.mode ?? 'auto';
    // Refuse a hostile URL before any credit is held; the client checks again at connect time.
    const url = (await this.deps.client.checkUrl(input.url)).toString();
    const { config, runner, providers, log, breakers } = this.deps;
    const outcome = await runner.run({
      principal,
      operation: 'PARSE',
      input: { url, mode, quality },
      idempotency: idempotencyFor(options.idempotencyKey, 'PARSE', { url, mode, quality }),
      price: config.prices.parse,
      timeoutMs: config.parseTimeoutMs,
      execute: ({ signal }) =>
        runWithFailover(providers, signal, log, (p) => p.parse({ url, mode, quality, signal, accountId: principal.accountId }), breakers),
    });
    return successBody(outcome.jobId, { url, mode, quality }, outcome.result, outcome);
  }
}
