import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { Services } from '../modules/services.js';

/**
 * GET and HEAD /api/streams/{token}: a parse answer's stream URL. No Authorization header: the
 * sealed token is the credential (the service checks the key and membership behind it again).
 * The token is matched as a wildcard, so no router limit on a parameter's length applies to it.
 */
export function registerStreamRoutes(app: FastifyInstance, services: Services): void {
  app.route({
    method: ['GET', 'HEAD'],
    url: '/api/streams/*',
    exposeHeadRoute: false,
    handler: async (req: FastifyRequest, reply: FastifyReply) => {
      const token = (req.params as { '*': string })['*'];
      const range = req.headers.range;
      // The caller may leave before the answer begins (ffmpeg still opening its inputs): everything stops then.
      const left = new AbortController();
      const onClose = () => {
        if (!reply.raw.headersSent) left.abort();
      };
      reply.raw.once('close', onClose);
      try {
        const answer = await services.streams.open({
          token,
          head: req.method === 'HEAD',
          range: typeof range === 'string' ? range : null,
          signal: left.signal,
        });
        reply.raw.off('close', onClose);
        services.metrics.streams.inc({ outcome: 'opened' });
        reply.status(answer.status).headers({ ...answer.headers, 'cache-control': 'private, no-store' });
        return answer.body ? reply.send(answer.body) : reply.send();
      } catch (err) {
        services.metrics.streams.inc({ outcome: err instanceof AppError ? err.code : 'INTERNAL_ERROR' });
        const wait = err instanceof AppError ? err.details?.retryAfterSeconds : undefined;
        if (typeof wait === 'number') reply.header('retry-after', String(wait));
        throw err;
      }
    },
  });
}
