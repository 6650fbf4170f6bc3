import { z } from 'zod';
import type { Config } from '../../config.js';
import type { GuardedHttpClient } from '../../net/guarded-client.js';
import type { CircuitBreakers } from '../../providers/circuit-breakers.js';
import { runWithFailover, type FailoverLog } from '../../providers/provider-failover.js';
import { PARSE_MODES, PARSE_QUALITIES, type MediaFormat, type ParseProvider, type ParseResult } from '../../providers/parse/parse.types.js';
import { parsePolicy } from './parse.policy.js';
import type { Principal } from '../api-keys/api-key.service.js';
import { idempotencyFor } from '../tasks/idempotency.js';
import { successBody } from '../jobs/job.result.js';
import type { TaskRunner } from '../tasks/task-runner.js';
import { dropNulls, httpUrl, validate } from '../validation.js';
import { AUDIO_FORMATS } from '../../media/stream-recipe.js';
import { planDelivery } from '../streams/stream-plan.js';
import type { StreamTokens } from '../streams/stream-token.js';
import type { MediaFormatBody, ParseResponseBody, ParseResultBody } from '../../types/contract/parse.js';

/** The parse request as the contract spells it. */
export const parseInputSchema = z.strictObject({
  url: httpUrl,
  mode: z.enum(PARSE_MODES, { error: `must be one of ${PARSE_MODES.join(', ')}` }).optional(),
  quality: z.enum(PARSE_QUALITIES, { error: `must be one of ${PARSE_QUALITIES.join(', ')}` }).optional(),
  audioFormat: z
    .enum(AUDIO_FORMATS, { error: `must be one of ${AUDIO_FORMATS.join(', ')}` })
    .optional()
    .describe(
      'The audio file the gateway makes when it streams audio (mode audio): best (default) copies the source’s codec; the others convert',
    ),
  stream: z
    .boolean({ error: 'must be true or false' })
    .optional()
    .describe('true: every format comes through the gateway (delivery "stream"); default false'),
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
      /** Seals the stream URLs of formats the gateway delivers itself. */
      streamTokens: StreamTokens;
    },
  ) {}

  async parse(principal: Principal, rawInput: unknown, options: { idempotencyKey?: string | null } = {}): Promise<ParseResponse> {
    parsePolicy.start(principal);
    const input = validate(parseInputSchema, dropNulls(rawInput as object));
    const quality = parsePolicy.quality(principal, input.quality);
    const mode = input.mode ?? 'auto';
    // Refuse a hostile URL before any credit is held; the client checks again at connect time.
    const url = (await this.deps.client.checkUrl(input.url)).toString();
    const { config, runner, providers, log, breakers, streamTokens } = this.deps;
    // Only what the caller asked is echoed and keyed: a request without the new fields is the same request as before them.
    const asked = {
      url,
      mode,
      quality,
      ...(input.audioFormat ? { audioFormat: input.audioFormat } : {}),
      ...(input.stream !== undefined ? { stream: input.stream } : {}),
    };
    const outcome = await runner.run({
      principal,
      operation: 'PARSE',
      input: asked,
      idempotency: idempotencyFor(options.idempotencyKey, 'PARSE', asked),
      price: config.prices.parse,
      timeoutMs: config.parseTimeoutMs,
      execute: async ({ signal, jobId }) => {
        const found = await runWithFailover(
          providers,
          signal,
          log,
          (p) => p.parse({ url, mode, quality, signal, accountId: principal.accountId }),
          breakers,
        );
        // Stream URLs name the job, so they are made here, once its id exists; a replay returns the same ones.
        const result = planDelivery(
          found.result,
          {
            jobId,
            accountId: principal.accountId,
            apiKeyId: principal.apiKeyId,
            membership: parsePolicy.needsMembership(principal, quality),
            pageUrl: url,
            mode,
            audioFormat: input.audioFormat ?? 'best',
            stream: input.stream ?? false,
            publicUrl: config.publicUrl,
            ttlMs: config.streams.ttlMs,
            now: Date.now(),
          },
          streamTokens,
        );
        return { ...found, result };
      },
    });
    return successBody(outcome.jobId, asked, withDelivery(outcome.result), outcome);
  }
}

/**
 * The answer as the contract has it: every format with its `delivery` (an answer stored before
 * formats had one, replayed, is all direct), and nothing of the providers' own bookkeeping.
 */
function withDelivery(result: ParseResult): ParseResultBody {
  const deliver = (m: MediaFormat): MediaFormatBody => {
    const { derived: _derived, audio, ...format } = m;
    return { ...format, delivery: m.delivery ?? 'direct', ...(audio !== undefined ? { audio: audio ? deliver(audio) : null } : {}) };
  };
  return {
    ...result,
    media: deliver(result.media),
    alternatives: result.alternatives.map(deliver),
    items: result.items.map((i) => ({ ...deliver(i), title: i.title, cover: i.cover, alternatives: i.alternatives.map(deliver) })),
  };
}
