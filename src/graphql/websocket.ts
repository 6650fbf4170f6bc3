import type { FastifyInstance } from 'fastify';
import { getOperationAST, GraphQLError, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import type { Context } from 'graphql-ws';
import { useServer, type Extra } from 'graphql-ws/use/ws';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { AppError, isAppError } from '../errors.js';
import type { Principal } from '../modules/api-keys/api-key.service.js';
import { authenticate, type Credentials } from '../http/authenticate.js';
import { sessionIdFrom } from '../http/credentials.js';
import { CSRF_HEADER } from '../http/csrf.js';
import { clientAddress, type TrustFunction } from '../net/client-address.js';
import { writeSocketError } from '../http/error-body.js';
import { rateLimitHeaders, type RateLimits } from '../http/rate-limit.js';
import type { Services } from '../modules/services.js';
import { createGqlContext } from './context.js';
import type { DocumentCache } from './documents.js';
import type { TrustedDocuments } from './persisted-documents.js';
import { SocketCredentials } from './socket-credentials.js';

/** Where subscriptions are served. */
const PATH = '/graphql';
/**
 * Largest message a client may send (a subscribe's document and variables are far smaller: the
 * token limit comes first); a bigger frame closes the socket with 1009. ws alone would take 100 MiB.
 */
export const MAX_MESSAGE_BYTES = 64 * 1024;
/** Subscriptions one socket may run at once; one more is refused RATE_LIMITED until one ends. */
export const MAX_SUBSCRIPTIONS_PER_SOCKET = 20;
/** Sockets one client address may hold open on one instance; one more upgrade is refused 429. */
export const MAX_SOCKETS_PER_ADDRESS = 100;
/** How long a new socket may take to send connection_init (graphql-ws's default, said here). */
const CONNECTION_INIT_TIMEOUT_MS = 3000;

export interface SubscriptionsOptions {
  schema: GraphQLSchema;
  services: Services;
  /** Parsed and validated documents, with the HTTP door's rules (limits, introspection). */
  documents: DocumentCache;
  /** The one GraphQL error mapper (errors.ts), suggestions dropped when introspection is off. */
  format(error: GraphQLError): GraphQLFormattedError;
  /** The HTTP door's rate limits: the same buckets (and Redis keys) count both doors. */
  limits: RateLimits;
  /** Fastify's trustProxy: the client's address at the upgrade is found as req.ip is. */
  trustProxy: TrustFunction;
  /** The HTTP door's trusted documents: sent by hash alone here too, and in trusted-only mode the only ones run. */
  trusted: TrustedDocuments;
}

/**
 * Subscriptions (jobUpdated) over the graphql-ws protocol at /graphql, with the HTTP door's limits:
 * - the upgrade takes a point of the client address's bucket (429 with Retry-After when none is
 *   left, before any handshake), and one address holds at most MAX_SOCKETS_PER_ADDRESS sockets;
 * - connection_init must authenticate, once per socket: the key in the `Authorization` connection
 *   parameter (or the upgrade's header), or the account area's cookie with the session's CSRF token
 *   in the parameters (a WebSocket is not bound by the same-origin policy). Refused: 4401 (missing,
 *   unknown or revoked credentials) or 4403 (a cookie without its CSRF token), and nothing else
 *   is read; a socket that never sends it is closed after 3 s;
 * - each subscribe takes a point of the caller's bucket (the key, or a signed-in account) and of
 *   its account's, the same ones HTTP requests take; then the operation limits (graphql-armor, tokens) apply;
 * - only subscriptions are served: queries and mutations are refused INVALID_INPUT, so they run
 *   over HTTP with its per-request limits, and nothing is spent over the socket;
 * - messages are at most MAX_MESSAGE_BYTES, subscriptions at most MAX_SUBSCRIPTIONS_PER_SOCKET.
 * The principal found at connect serves every operation, and the socket lives no longer than its
 * credential (SocketCredentials): a revoked key, an ended or expired session closes it with 4401, on
 * every instance, and its subscriptions end with it.
 */
export function registerSubscriptions(
  app: FastifyInstance,
  { schema, services, documents, format, limits, trustProxy, trusted }: SubscriptionsOptions,
): void {
  const { log } = services;
  const wsServer = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const callers = new SocketCredentials(services);
  const openByAddress = new Map<string, number>();

  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    void upgrade(req, socket, head).catch((err: unknown) => {
      log.error({ err }, 'a WebSocket upgrade failed');
      writeSocketError(socket, new AppError('INTERNAL_ERROR'));
    });
  });

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // A client that goes away while its upgrade is weighed.
    const gone = () => socket.destroy();
    socket.on('error', gone);
    if (new URL(req.url ?? '/', 'http://gateway').pathname !== PATH) {
      return writeSocketError(socket, new AppError('NOT_FOUND', `No WebSocket here; subscriptions are served at ${PATH}.`));
    }
    const address = clientAddress(req, trustProxy);
    const counted = await limits.byAddress(address);
    if (counted.refused) return writeSocketError(socket, counted.refused, rateLimitHeaders(counted));
    const open = openByAddress.get(address) ?? 0;
    if (open >= MAX_SOCKETS_PER_ADDRESS) {
      const refused = new AppError(
        'RATE_LIMITED',
        `At most ${MAX_SOCKETS_PER_ADDRESS} WebSockets may be open from one address; close one first.`,
        { limit: MAX_SOCKETS_PER_ADDRESS },
      );
      return writeSocketError(socket, refused);
    }
    if (socket.destroyed) return;
    // Counted until the connection closes, whether or not the handshake succeeds.
    openByAddress.set(address, open + 1);
    socket.once('close', () => {
      const left = (openByAddress.get(address) ?? 1) - 1;
      if (left > 0) openByAddress.set(address, left);
      else openByAddress.delete(address);
    });
    socket.off('error', gone);
    wsServer.handleUpgrade(req, socket, head, (ws) => {
      wsServer.emit('connection', ws, req);
      // ws has already closed the socket with the code that fits (1009 for a message too big, 1002,
      // 1007); graphql-ws would print each such client mistake on the console as a server bug.
      ws.removeAllListeners('error');
      ws.on('error', (err) => log.debug({ err }, 'a WebSocket client broke the protocol'));
    });
  }

  const errorOf = (err: AppError) => new GraphQLError(err.message, { originalError: err });
  // A refusal of the whole operation carries its own code (the mapper would call it INVALID_INPUT: it has no path).
  const formatOne = (error: GraphQLError): GraphQLFormattedError =>
    !error.path && isAppError(error.originalError)
      ? {
          message: error.message,
          extensions: { code: error.originalError.code, ...(error.originalError.details ? { details: error.originalError.details } : {}) },
        }
      : format(error);

  const cleanup = useServer(
    {
      schema,
      connectionInitWaitTimeout: CONNECTION_INIT_TIMEOUT_MS,
      onConnect: async (ctx: Context<Record<string, unknown> | undefined, Extra>) => {
        const { socket } = ctx.extra;
        const credentials = credentialsOf(ctx, services.auth.sessionCookieName);
        try {
          const principal = await authenticate(services.auth, credentials);
          if (socket.readyState !== socket.OPEN) return false;
          callers.track(socket, credentials, principal);
          return true;
        } catch (err) {
          // Closed here with the code that fits; graphql-ws's own close (4403) then finds it closing.
          callers.refuse(socket, err);
          return false;
        }
      },
      onSubscribe: async (ctx, _id, payload) => {
        // Counted on arrival (this one among them), before any wait lets the next subscribe in.
        const running = Object.keys(ctx.subscriptions).length;
        const { socket } = ctx.extra;
        let principal: Principal;
        try {
          principal = await callers.current(socket);
        } catch (err) {
          return [errorOf(isAppError(err) ? err : new AppError('INTERNAL_ERROR'))];
        }
        const counted = await limits.byCaller(principal.apiKeyId ?? principal.accountId);
        if (counted.refused) return [errorOf(counted.refused)];
        const byAccount = await limits.byAccount(principal.accountId);
        if (byAccount.refused) return [errorOf(byAccount.refused)];
        if (running > MAX_SUBSCRIPTIONS_PER_SOCKET) {
          return [
            errorOf(
              new AppError(
                'RATE_LIMITED',
                `At most ${MAX_SUBSCRIPTIONS_PER_SOCKET} subscriptions run at once on one connection; complete one first.`,
                { limit: MAX_SUBSCRIPTIONS_PER_SOCKET },
              ),
            ),
          ];
        }
        // A trusted document may come by its hash alone (extensions.persistedQuery, as over HTTP).
        const hash = (payload.extensions?.persistedQuery as { sha256Hash?: unknown } | undefined)?.sha256Hash;
        const query = payload.query || trusted.text(hash);
        if (!query)
          return [
            errorOf(
              new AppError('INVALID_INPUT', 'A subscribe needs a query, or the hash of a trusted document in extensions.persistedQuery.'),
            ),
          ];
        try {
          await trusted.admit(payload.query ? query : undefined, hash, () => Promise.resolve(principal));
        } catch (err) {
          return [errorOf(isAppError(err) ? err : new AppError('INTERNAL_ERROR'))];
        }
        // The HTTP door's rules hold here too: tokens, depth, aliases, directives, introspection, and the cost with these variables.
        const prepared = documents.prepare(query, payload);
        if (prepared.errors) return [...prepared.errors];
        // Queries and mutations go over HTTP, where each request meets the limits and answers once.
        const operation = getOperationAST(prepared.document, payload.operationName);
        if (operation && operation.operation !== 'subscription') {
          return [
            errorOf(
              new AppError(
                'INVALID_INPUT',
                'Only subscriptions are served over WebSocket; send queries and mutations over HTTP POST /graphql.',
              ),
            ),
          ];
        }
        // One context per operation, for as long as the subscription lasts: loaders must not cache.
        const request = { requestId: randomUUID(), principal: () => Promise.resolve(principal) };
        return {
          schema,
          document: prepared.document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue: createGqlContext(request, services, { cache: false }),
        };
      },
      onError: (_ctx, _id, _payload, errors) => errors.map(formatOne),
      onNext: (_ctx, _id, _payload, _args, result) => (result.errors ? { ...result, errors: result.errors.map(format) } : undefined),
    },
    wsServer,
  );
  // Stopping: subscribers are told 1001 (going away) at once, so they subscribe again elsewhere and the
  // HTTP server can close (it waits for upgraded sockets too); one that does not answer the closing
  // handshake is cut after a second.
  let disposed: Promise<void> = Promise.resolve();
  app.addHook('preClose', async () => {
    callers.stop();
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

/** What a socket presents: its connection parameters first, then the upgrade request's headers. */
function credentialsOf(ctx: Context<Record<string, unknown> | undefined, Extra>, sessionCookie: string | null): Credentials {
  const params = ctx.connectionParams ?? {};
  const fromParams = params.Authorization ?? params.authorization;
  const { headers } = ctx.extra.request;
  const csrf = params[CSRF_HEADER] ?? params.csrfToken;
  return {
    authorization: typeof fromParams === 'string' ? fromParams : headers.authorization,
    sessionId: sessionCookie ? sessionIdFrom(headers.cookie, sessionCookie) : undefined,
    csrfToken: typeof csrf === 'string' ? csrf : undefined,
  };
}
