import { ApolloServer, type ApolloServerOptionsWithGateway, type ApolloServerPlugin } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import type { KeyValueCache } from '@apollo/utils.keyvaluecache';
import { GraphQLError, NoSchemaIntrospectionCustomRule, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { GqlContext } from './context.js';
import { costLimitPlugin } from './cost-limit.plugin.js';
import { boundedDocumentStore } from './document-store.js';
import type { Executor } from './jit-executor.js';
import type { OperationLimits } from './limits.js';
import { operationMetricsPlugin } from './operation-metrics.plugin.js';

type Gateway = ApolloServerOptionsWithGateway<GqlContext>['gateway'];

/** Headers a browser can only send after a CORS preflight: a request carrying one is not a cross-site forgery. */
export const CSRF_PREFLIGHT_HEADERS = [
  // Apollo's own (Apollo Client and Apollo's tools send them).
  'x-apollo-operation-name',
  'apollo-require-preflight',
  // API-key callers: browsers preflight Authorization anyway.
  'authorization',
  // The account area: every request it makes carries its session's CSRF token.
  'x-csrf-token',
];

export interface ApolloOptions {
  schema: GraphQLSchema;
  /** graphql-jit for documents sent again (jit-executor.ts), or graphql-js alone while tracing. */
  execute: Executor;
  limits: OperationLimits;
  introspection: boolean;
  /** The one GraphQL error mapper (errors.ts), suggestions dropped when introspection is off. */
  format(error: GraphQLError): GraphQLFormattedError;
  /** The page a browser gets at GET /graphql (null: none, as in production). */
  landingPage: string | null;
  /** Automatic persisted queries, trusted documents first (apq-cache.ts), registered by apqRegistration. */
  apqCache: KeyValueCache<string>;
  apqTtlSeconds: number;
  apqRegistration: ApolloServerPlugin<GqlContext>;
  /** /metrics' registry, and the operation names its histogram may carry (trusted documents'). */
  metrics: { registry: Registry; operationNames: ReadonlySet<string> };
  log: Logger;
  env: string;
}

/**
 * Apollo Server's one way to run operations with something other than graphql-js's `execute`: the
 * gateway interface. This "gateway" serves the one local schema and hands every operation (its
 * document from the documentStore, so the same object each time) to the executor, which compiles
 * documents sent again with graphql-jit.
 */
function localGateway(schema: GraphQLSchema, execute: Executor): Gateway {
  let listeners: ((schemaContext: { apiSchema: GraphQLSchema; coreSupergraphSdl: string }) => void)[] = [];
  return {
    async load() {
      for (const listener of listeners) listener({ apiSchema: schema, coreSupergraphSdl: '' });
      return {
        executor: (rc) =>
          execute({ document: rc.document, operationName: rc.request.operationName, variables: rc.request.variables, context: rc.context }),
      };
    },
    onSchemaLoadOrUpdate(listener) {
      listeners.push(listener);
      return () => void (listeners = listeners.filter((l) => l !== listener));
    },
    async stop() {},
  };
}

/**
 * What the door adds to each request, in one listener (Apollo awaits every listener at every stage):
 * - over HTTP only queries and mutations: subscriptions run on the WebSocket door;
 * - an unknown persisted-query hash is a request that cannot run: 400 (Apollo answers 200). Its
 *   message stays `PersistedQueryNotFound`, which Apollo Client, urql and other APQ clients read to
 *   send the text;
 * - the answer's media type is the one the route chose (http-route.ts hands it over as the only
 *   Accept), so Apollo need not negotiate it again.
 */
const doorRules: ApolloServerPlugin<GqlContext> = {
  async requestDidStart({ request, response }) {
    const accept = request.http?.headers.get('accept');
    if (accept?.startsWith('application/')) response.http.headers.set('content-type', accept);
    return {
      async didResolveOperation({ operation }) {
        if (operation?.operation === 'subscription') {
          throw new GraphQLError('Subscriptions run over WebSocket (graphql-transport-ws) at /graphql, not over HTTP.', {
            extensions: { http: { status: 400 } },
          });
        }
      },
      async willSendResponse({ errors, response: answer }) {
        if (errors?.some((e) => e.extensions?.code === 'PERSISTED_QUERY_NOT_FOUND')) {
          answer.http.status = 400;
          answer.http.headers.delete('cache-control');
        }
      },
    };
  },
};

/** The landing page (landing-page.ts) as Apollo serves one: to a browser's GET, outside production. */
const landingPagePlugin = (html: string): ApolloServerPlugin<GqlContext> => ({
  async serverWillStart() {
    return {
      async renderLandingPage() {
        return { html };
      },
    };
  },
});

/**
 * Apollo Server 5 for /graphql over HTTP, with what the hand-written door did and what Apollo adds:
 * - documents parsed and validated once per text (a documentStore bounded by text size), with the
 *   token cap in the parser and the operation limits (graphql-armor) beside the specification's
 *   rules; introspection refused by graphql-js's own rule when it is off; the cost limit weighed
 *   with the request's variables before the operation runs;
 * - documents sent again run compiled (graphql-jit), through the gateway interface;
 * - the one error mapper for every error, with no stack traces; an operation that cannot run is
 *   400, an executed one 200, a mutation over GET 405 (Apollo's statuses are the contract's);
 * - automatic persisted queries over POST and GET, registered by authenticated callers within a
 *   quota, in a bounded cache shared through a Redis of its own;
 * - CSRF prevention that lets API-key callers and the account area through;
 * - per-operation metrics; Apollo's cache-control, usage reporting and inline tracing are off.
 */
export async function startApollo(o: ApolloOptions): Promise<ApolloServer<GqlContext>> {
  const server = new ApolloServer<GqlContext>({
    gateway: localGateway(o.schema, o.execute),
    documentStore: boundedDocumentStore(),
    parseOptions: o.limits.parseOptions,
    validationRules: [...o.limits.validationRules, ...(o.introspection ? [] : [NoSchemaIntrospectionCustomRule])],
    // Refused above in graphql-js's words, the same as on the WebSocket door; Apollo's rule would add its own.
    introspection: true,
    formatError: (_formatted, error) => {
      const formatted = o.format(
        error instanceof GraphQLError
          ? error
          : new GraphQLError(String((error as Error)?.message ?? error), { originalError: error as Error }),
      );
      // Clients that look for the code (not only the message) see why in the details.
      if (error instanceof GraphQLError && error.extensions?.code === 'PERSISTED_QUERY_NOT_FOUND') {
        return { ...formatted, extensions: { ...formatted.extensions, details: { persistedQuery: 'NOT_FOUND' } } };
      }
      return formatted;
    },
    includeStacktraceInErrorResponses: false,
    persistedQueries: { cache: o.apqCache, ttl: o.apqTtlSeconds },
    csrfPrevention: { requestHeaders: CSRF_PREFLIGHT_HEADERS },
    allowBatchedHttpRequests: false,
    // Compact: Apollo's default indents every answer.
    stringifyResult: (result) => JSON.stringify(result),
    logger: o.log,
    nodeEnv: o.env,
    stopOnTerminationSignals: false,
    plugins: [
      o.landingPage === null ? ApolloServerPluginLandingPageDisabled() : landingPagePlugin(o.landingPage),
      // Cache-control hints would wrap every resolver; answers are never cacheable anyway (no-store).
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginSchemaReportingDisabled(),
      doorRules,
      costLimitPlugin(o.limits.checkCost),
      o.apqRegistration,
      operationMetricsPlugin(o.metrics.registry, o.metrics.operationNames),
    ],
  });
  await server.start();
  return server;
}
