import type { FastifyInstance } from 'fastify';
import type { GraphQLError, GraphQLFormattedError, GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { randomUUID } from 'node:crypto';
import { WebSocketServer } from 'ws';
import { requestContext } from '../modules/auth.js';
import type { Services } from '../services.js';
import { createGqlContext } from './context.js';
import type { DocumentCache } from './documents.js';

export interface SubscriptionsOptions {
  schema: GraphQLSchema;
  services: Services;
  /** The HTTP door's cache: the same rules (limits, introspection) and the same parsed documents. */
  documents: DocumentCache;
  /** The one GraphQL error mapper (errors.ts), suggestions dropped when introspection is off. */
  format(error: GraphQLError): GraphQLFormattedError;
}

/**
 * Subscriptions (jobUpdated) over the graphql-ws protocol at the same /graphql path. The key comes
 * in the connection's `Authorization` parameter, or the upgrade request's header for clients that
 * can send one; errors carry the same codes as on HTTP.
 */
export function registerSubscriptions(app: FastifyInstance, { schema, services, documents, format }: SubscriptionsOptions): void {
  const wsServer = new WebSocketServer({ server: app.server, path: '/graphql' });
  const formatAll = (errors: readonly GraphQLError[]) => errors.map(format);
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
      // The HTTP door's rules hold here too: tokens, depth, aliases, directives, cost, introspection.
      onSubscribe: (_ctx, _id, payload) => {
        const prepared = documents.prepare(payload.query);
        return prepared.errors ? [...prepared.errors] : { schema, document: prepared.document, operationName: payload.operationName, variableValues: payload.variables };
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
