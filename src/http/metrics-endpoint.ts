import type { FastifyInstance } from 'fastify';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { toErrorResponse } from './error-body.js';

/** Whether a request's Authorization names the metrics token (always, when there is none). */
function authorized(token: string | null, authorization: string | undefined): boolean {
  if (!token) return true;
  const given = Buffer.from(/^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1] ?? '');
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const refusal = () => new AppError('UNAUTHENTICATED', 'A valid metrics token is required.');

/**
 * GET /metrics (Prometheus), for operators only: it shows every route's traffic and the media read
 * cache's reuse, which would tell a caller that someone else probed a URL. Either on the service's
 * port behind METRICS_TOKEN, or, with METRICS_PORT, on a listener of its own that the deployment does
 * not publish (then PORT answers 404 there); the token, when set, is asked on either. Production
 * refuses to start with neither (config.ts).
 */
export function registerMetricsEndpoint(app: FastifyInstance, config: Config, registry: Registry): void {
  if (config.metricsPort === null) {
    app.get('/metrics', async (req, reply) => {
      if (!authorized(config.metricsToken, req.headers.authorization)) throw refusal();
      return reply.type(registry.contentType).send(await registry.metrics());
    });
    return;
  }
  let server: Server | null = null;
  app.addHook('onReady', async () => {
    server = createServer((req, res) => void answer(req, res, config.metricsToken, registry));
    const listener = server;
    await new Promise<void>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(config.metricsPort ?? 0, config.metricsHost, () => resolve());
    });
    const { address, port } = listener.address() as AddressInfo;
    app.log.info({ address, port }, 'metrics are served on their own port');
  });
  app.addHook('onClose', async () => {
    const listener = server;
    if (listener) await new Promise<void>((resolve) => listener.close(() => resolve()));
  });
}

/** One request to the metrics listener: GET /metrics, or the one error body. */
async function answer(req: IncomingMessage, res: ServerResponse, token: string | null, registry: Registry): Promise<void> {
  const fail = (err: AppError) => {
    const { status, body } = toErrorResponse(err, randomUUID());
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
  };
  if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics')
    return fail(new AppError('NOT_FOUND', 'Only GET /metrics is served here.'));
  if (!authorized(token, req.headers.authorization)) return fail(refusal());
  try {
    const text = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(text);
  } catch {
    fail(new AppError('INTERNAL_ERROR'));
  }
}
