import 'reflect-metadata';
import fastifyCookie from '@fastify/cookie';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { AppError } from './errors.js';
import { registerGraphqlDoors } from './graphql/doors.js';
import type { ResolverClasses } from './graphql/schema.js';
import { trustFunction } from './net/client-address.js';
import { toErrorResponse, writeClientError } from './http/error-body.js';
import { registerCsrfGuard } from './http/csrf-guard.js';
import { registerDraining } from './http/draining.js';
import { registerMetricsEndpoint } from './http/metrics-endpoint.js';
import { registerRateLimits } from './http/rate-limit.js';
import { registerAccountPage } from './rest/account-page.js';
import { registerDocsPage } from './rest/docs-page.js';
import { registerRestRoutes } from './rest/routes.js';
import { registerSessionRoutes } from './rest/session.routes.js';
import { registerStreamRoutes } from './rest/streams.routes.js';
import type { Services } from './modules/services.js';
import { loggedRequest } from './logger.js';
import { enterRequest } from './request-scope.js';

export interface AppDeps {
  services: Services;
  orm: MikroORM;
  /** The GraphQL door's resolvers (the composition root's list). */
  resolvers: ResolverClasses;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** The HTTP server with both doors; used by `mediagate serve` and by the tests. */
export async function buildApp({ services, orm, resolvers }: AppDeps): Promise<FastifyInstance> {
  const { config, log } = services;
  const trustProxy = trustFunction(config.trustProxy);
  const app = Fastify({
    // Fastify's request lines, with a stream URL's token left out (loggedRequest).
    loggerInstance: log.child({}, { serializers: { req: loggedRequest } }) as FastifyBaseLogger,
    // req.ip: the client named by trusted proxies in X-Forwarded-For (TRUST_PROXY), else the peer.
    trustProxy: config.trustProxy === null ? false : trustProxy,
    // A caller's request id is kept when it is harmless, so logs can be joined across systems.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    bodyLimit: 1024 * 1024,
    clientErrorHandler: writeClientError,
    // A bad percent-encoding or an over-long path parameter is refused by the router itself: in our body too.
    frameworkErrors: (err, req, reply) => {
      const { status, body } = toErrorResponse(err, req.id);
      return (reply as FastifyReply).status(status).header('x-request-id', req.id).type('application/json; charset=utf-8').send(body);
    },
    // Stopping: idle keep-alive connections close at once; requests that still come are answered by
    // registerDraining, in the contract's error body rather than Fastify's.
    forceCloseConnections: 'idle',
    return503OnClosing: false,
  });
  registerDraining(app);
  // Only JSON bodies: anything else is 415.
  app.removeContentTypeParser('text/plain');
  // The account area's session cookie (__Host-mg_session); API callers never need one.
  await app.register(fastifyCookie);

  // Work started by a request (a job row, its log lines) knows which request it came from.
  app.addHook('onRequest', async (req) => {
    enterRequest(req.id);
  });
  app.addHook('onSend', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });
  // A fragment is never part of a request target (RFC 9110 §7.1): clients do not send one. The
  // router reads the query string from a `#` on and other readers from the first `?`, so a target
  // holding one could be read two ways: it is refused on every route, before anything reads it.
  app.addHook('onRequest', async (req) => {
    if (req.raw.url?.includes('#'))
      throw new AppError('INVALID_INPUT', 'The request target holds a `#`: fragments are never sent; percent-encode it as %23.', {
        target: 'contains #',
      });
  });

  app.setErrorHandler((err, req, reply) => {
    const { status, body, known } = toErrorResponse(err, req.id);
    if (!known) req.log.error({ err }, 'unhandled error');
    // A refusal that says when to come back says it in the header too (429 and 503 alike).
    const retryAfter = body.error.details?.retryAfterSeconds;
    if (typeof retryAfter === 'number') reply.header('retry-after', String(retryAfter));
    return reply.status(status).type('application/json; charset=utf-8').send(body);
  });
  app.setNotFoundHandler((req, reply) => {
    const { status, body } = toErrorResponse(new AppError('NOT_FOUND', `No route ${req.method} ${req.url.split('?')[0]}.`), req.id);
    return reply.status(status).send(body);
  });

  const limits = registerRateLimits(app, config, services.auth);
  app.addHook('onClose', () => limits.close());
  // A cookie-authenticated change to /graphql or /api/* needs the session's CSRF token, checked
  // before the body is read (after the address's rate limit, which counts the attempt).
  registerCsrfGuard(app, services.auth);

  app.addHook('onResponse', async (req, reply) => {
    services.metrics.httpRequests.observe(
      { method: req.method, route: req.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  registerMetricsEndpoint(app, config, services.metrics.registry);

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    try {
      await orm.em.getConnection().execute('select 1');
      return { status: 'ready' };
    } catch {
      return reply.status(503).send({ status: 'unavailable', reason: 'database' });
    }
  });

  await registerGraphqlDoors(app, { services, resolvers, limits, trustProxy });

  registerRestRoutes(app, services);
  registerStreamRoutes(app, services);
  registerSessionRoutes(app, services);
  await registerAccountPage(app, config);
  await registerDocsPage(app);
  return app;
}
