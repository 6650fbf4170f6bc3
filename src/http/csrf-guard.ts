import type { FastifyInstance } from 'fastify';
import { isAppError } from '../errors.js';
import type { Authenticator } from '../modules/auth.js';
import { authenticate } from './authenticate.js';
import { credentialsOf, sessionIdFrom } from './credentials.js';
import { mayChange } from './csrf.js';

/**
 * The CSRF guard of the two doors: a cookie-authenticated request to /graphql or /api/* that may
 * change something is authenticated before it is even parsed, and refused as a whole: 401 for a
 * dead session, 403 without the CSRF token. On /graphql the refusal is a GraphQL body with that
 * status; on /api/* the usual error body.
 */
export function registerCsrfGuard(app: FastifyInstance, auth: Authenticator): void {
  const cookie = auth.sessionCookieName;
  if (!cookie) return;
  app.addHook('onRequest', async (req, reply) => {
    const route = req.routeOptions.url ?? '';
    if (!mayChange(req.method) || req.headers.authorization || !(route === '/graphql' || route.startsWith('/api/'))) return;
    if (!sessionIdFrom(req.headers.cookie, cookie)) return;
    try {
      await authenticate(auth, credentialsOf(req, cookie));
    } catch (err) {
      if (route !== '/graphql' || !isAppError(err)) throw err;
      return reply
        .status(err.status)
        .type('application/json; charset=utf-8')
        .send({ errors: [{ message: err.message, extensions: { code: err.code } }] });
    }
  });
}
