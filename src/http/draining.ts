import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';

/**
 * How HTTP stops once `app.close()` begins (a SIGTERM to `mediagate serve`): the listening socket
 * closes (Fastify), every request that still arrives on an open connection is answered 503 with
 * `Connection: close` (`/readyz` too, so a load balancer drains this instance at once), a response in
 * flight closes its connection once sent, and when the last one is answered every connection left
 * (idle keep-alive, or opened and never used, which Node's closeIdleConnections leaves alone) is
 * closed, so the server closes then instead of at the keep-alive timeout.
 * Register it first: its onRequest hook must run before any other.
 */
export function registerDraining(app: FastifyInstance): void {
  let closing = false;
  let inFlight = 0;
  const closeLeftovers = () => {
    // Deferred a turn: a response that just finished closes its own socket (Connection: close).
    if (closing && inFlight === 0) setImmediate(() => app.server.closeAllConnections());
  };
  // Counted on the raw server, so a request answered by any hook or handler, or aborted, is counted out.
  app.server.on('request', (_req, res) => {
    inFlight++;
    res.once('close', () => {
      inFlight--;
      closeLeftovers();
    });
  });
  app.addHook('preClose', async () => {
    closing = true;
    closeLeftovers();
  });
  app.addHook('onRequest', async (req, reply) => {
    if (!closing) return;
    if (req.routeOptions.url === '/readyz') return reply.code(503).send({ status: 'unavailable', reason: 'stopping' });
    throw new AppError('PROVIDER_UNAVAILABLE', 'This instance is stopping; send the request again.');
  });
  app.addHook('onSend', async (_req, reply) => {
    if (closing) reply.header('connection', 'close');
  });
}
