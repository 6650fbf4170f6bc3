import type { CookieSerializeOptions } from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, isAppError } from '../errors.js';
import { credentialsOf, mayChange, sessionIdFrom } from '../modules/auth.js';
import { SESSION_COOKIE } from '../modules/sessions/session.service.js';
import type { SessionView } from '../modules/sessions/session.service.js';
import type { Services } from '../services.js';

/**
 * The account area's sign-in without an identity provider, and what its page needs to start:
 * - `GET /account/config.json`: which sign-ins the page offers (no auth).
 * - `POST /account/api/session` `{ token }`: spends a login link for a session (cookie `mg_session`).
 * - `GET /account/api/session`: the current session (the page recovers its CSRF token after a reload), 204 when none.
 * - `POST /account/api/logout`: ends the session on the server and clears the cookie.
 * And the CSRF guard of the two doors: a cookie-authenticated request to /graphql or /api/* that
 * may change something is refused before it is parsed unless its session is live (else 401) and it
 * carries the session's CSRF token (else 403).
 * Needs @fastify/cookie registered on the app.
 */
export function registerSessionRoutes(app: FastifyInstance, services: Services): void {
  const { config, sessions } = services;

  const cookieOptions = (req: FastifyRequest): CookieSerializeOptions => ({
    path: '/',
    httpOnly: true,
    sameSite: 'strict',
    // req.protocol follows X-Forwarded-Proto only when Fastify trusts the proxy; an https PUBLIC_URL
    // means browsers reach us over TLS whatever the hop to this process is.
    secure: req.protocol === 'https' || config.publicUrl.startsWith('https:'),
  });
  const view = (s: SessionView) => ({ csrfToken: s.csrfToken, expiresAt: s.expiresAt.toISOString(), account: s.account });
  const noStore = (reply: FastifyReply) => reply.header('cache-control', 'no-store');

  // A cookie-authenticated request that may change something is authenticated before it is even
  // parsed, and refused as a whole: 401 for a dead session, 403 without the CSRF token. On /graphql
  // the refusal is a GraphQL body with that status; on /api/* the usual error body.
  app.addHook('onRequest', async (req, reply) => {
    const route = req.routeOptions.url ?? '';
    if (!mayChange(req.method) || req.headers.authorization || !(route === '/graphql' || route.startsWith('/api/'))) return;
    if (!sessionIdFrom(req.headers.cookie)) return;
    try {
      await services.auth.authenticate(credentialsOf(req));
    } catch (err) {
      if (route !== '/graphql' || !isAppError(err)) throw err;
      return reply
        .status(err.status)
        .type('application/json; charset=utf-8')
        .send({ errors: [{ message: err.message, extensions: { code: err.code } }] });
    }
  });

  app.get('/account/config.json', async (_req, reply) => {
    reply.header('cache-control', 'no-cache');
    const oidc = config.oidc?.clientId ? { issuer: config.oidc.issuer, clientId: config.oidc.clientId } : null;
    return { oidc, loginLinks: true };
  });

  app.post('/account/api/session', { bodyLimit: 4 * 1024 }, async (req, reply) => {
    const body = req.body;
    if (!body || typeof body !== 'object' || Array.isArray(body) || typeof (body as { token?: unknown }).token !== 'string') {
      throw new AppError('INVALID_INPUT', 'Send { "token": "<the login link token>" }.', { token: 'required string' });
    }
    const started = await sessions.start((body as { token: string }).token);
    noStore(reply).setCookie(SESSION_COOKIE, started.sessionId, { ...cookieOptions(req), maxAge: sessions.sessionSeconds });
    return view(started);
  });

  // "Not signed in" is an answer, not an error: 204, so a signed-out page logs no failed request.
  app.get('/account/api/session', async (req, reply) => {
    noStore(reply);
    const id = req.cookies[SESSION_COOKIE];
    if (!id) return reply.status(204).send();
    const live = await sessions.resolve(id).catch((err: unknown) => {
      if (isAppError(err) && err.code === 'UNAUTHENTICATED') return null;
      throw err;
    });
    // An ended or expired session's cookie is cleared, so the browser stops sending it.
    if (!live) return reply.clearCookie(SESSION_COOKIE, cookieOptions(req)).status(204).send();
    return view(live);
  });

  app.post('/account/api/logout', async (req, reply) => {
    noStore(reply);
    const id = req.cookies[SESSION_COOKIE];
    if (id) {
      // A live session is ended only with its CSRF token (a dead one has nothing left to end).
      const live = await services.auth.authenticate({ ...credentialsOf(req), authorization: undefined }).then(
        () => true,
        (err: unknown) => {
          if (isAppError(err) && err.code === 'FORBIDDEN') throw err;
          return false;
        },
      );
      if (live) await sessions.end(id);
    }
    return reply.clearCookie(SESSION_COOKIE, cookieOptions(req)).status(204).send();
  });
}
