import type { FastifyInstance } from 'fastify';
import { parse, specifiedRules, validate, type GraphQLError, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { randomUUID } from 'node:crypto';
import { WebSocketServer } from 'ws';
import { requestContext } from '../modules/auth.js';
import type { Services } from '../services.js';
import { createGqlContext } from './context.js';
import { formatGraphqlError } from './errors.js';
import type { OperationLimits } from './limits.js';

/**
 * Subscriptions (jobUpdated) over the graphql-ws protocol at the same /graphql path. The key comes
 * in the connection's `Authorization` parameter, or the upgrade request's header for clients that
 * can send one; errors carry the same codes as on HTTP.
 */
export function registerSubscriptions(app: FastifyInstance, schema: GraphQLSchema, services: Services, limits: OperationLimits): void {
  const wsServer = new WebSocketServer({ server: app.server, path: '/graphql' });
  const format = formatGraphqlError(services.log);
  const formatAll = (errors: readonly GraphQLError[]) => errors.map((e) => limits.hideSuggestions(format(e.toJSON(), e)));
  const cleanup = useServer(
    {
      schema,
      context: (ctx) => {
        const params = (ctx.connectionParams ?? {}) as Record<string, unknown>;
        const fromParams = params.Authorization ?? params.authorization;
        const header = typeof fromParams === 'string' ? fromParams : ctx.extra.request.headers.authorization;
        // One context per operation, for as long as the subscription lasts: loaders must not cache.
        // The account area's cookie works here too, but only with the session's CSRF token in the
        // connection parameters: a WebSocket is not bound by the same-origin policy.
        const csrf = params['x-csrf-token'] ?? params.csrfToken;
        const credentials = { authorization: header, cookie: ctx.extra.request.headers.cookie, csrfToken: typeof csrf === 'string' ? csrf : undefined };
        return createGqlContext(requestContext(services.auth, credentials, randomUUID()), services, { cache: false });
      },
      // The HTTP door's limits hold here too: tokens, depth, aliases, directives and cost.
      onSubscribe: (_ctx, _id, payload) => {
        let document;
        try {
          document = parse(payload.query, limits.parseOptions);
        } catch (err) {
          return [err as GraphQLError];
        }
        const errors = validate(schema, document, [...specifiedRules, ...limits.validationRules]);
        return errors.length ? errors : undefined;
      },
      onError: (_ctx, _id, _payload, errors) => formatAll(errors),
      onNext: (_ctx, _id, _payload, _args, result) => (result.errors ? { ...result, errors: formatAll(result.errors) } : undefined),
    },
    wsServer,
  );
  // Stopping: subscribers are told 1001 (going away) at once, so they subscribe again elsewhere and the
  // HTTP server can close (it waits for upgraded sockets too); one that does not answer the closing
  // handshake is cut after a second.
  let disposed: Promise<void> = Promise.resolve();
  app.addHook('preClose', async () => {
    const cut = setTimeout(() => wsServer.clients.forEach((client) => client.terminate()), 1000);
    disposed = Promise.resolve(cleanup.dispose())
      .catch((err: unknown) => services.log.warn({ err }, 'closing the subscriptions failed'))
      .finally(() => clearTimeout(cut));
  });
  app.addHook('onClose', async () => {
    await disposed;
    await new Promise<void>((resolve) => wsServer.close(() => resolve()));
  });
}
