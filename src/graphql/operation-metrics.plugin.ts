import type { ApolloServerPlugin } from '@apollo/server';
import { Histogram, type Registry } from 'prom-client';
import type { GqlContext } from './context.js';

const NAME = 'mediagate_graphql_operation_duration_seconds';

/**
 * Per-operation metrics of the HTTP door, as one Prometheus histogram on /metrics:
 * `operation` (the operation's name when a trusted document names it, else `anonymous` for an
 * unnamed one, or `other`: names callers choose freely would make the label unbounded), `type`
 * (query, mutation, subscription; `none` when no operation was found), `outcome` (`OK`, or the
 * first error's code) and the time from the request's arrival at Apollo Server to its answer.
 */
export function operationMetricsPlugin(registry: Registry, knownNames: ReadonlySet<string>): ApolloServerPlugin<GqlContext> {
  const histogram =
    (registry.getSingleMetric(NAME) as Histogram<'operation' | 'type' | 'outcome'> | undefined) ??
    new Histogram({
      name: NAME,
      help: 'GraphQL operations over HTTP by operation name (trusted documents; else anonymous or other), type and outcome (OK or the first error code)',
      labelNames: ['operation', 'type', 'outcome'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    });
  return {
    async requestDidStart() {
      const started = process.hrtime.bigint();
      return {
        async willSendResponse({ operation, operationName, response }) {
          const body = response.body;
          const errors = body.kind === 'single' ? body.singleResult.errors : body.initialResult.errors;
          const code = errors?.[0]?.extensions?.code;
          histogram.observe(
            {
              operation: operationName ? (knownNames.has(operationName) ? operationName : 'other') : operation ? 'anonymous' : 'other',
              type: operation?.operation ?? 'none',
              outcome: errors?.length ? (typeof code === 'string' ? code : 'ERROR') : 'OK',
            },
            Number(process.hrtime.bigint() - started) / 1e9,
          );
        },
      };
    },
  };
}
