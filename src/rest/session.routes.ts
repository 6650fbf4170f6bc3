import type { CookieSerializeOptions } from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, isAppError } from '../errors.js';
import { csrfMatches, csrfRefused, csrfTokenOf } from '../http/csrf.js';
import type { SessionView } from '../modules/sessions/session.service.js';
import type { Services } from '../modules/services.js';

/**
 * The account area's sign-in, and what its page needs to start:
 * - `GET /account/config.json`: which sign-ins the page offers (no auth).
 * - `POST /account/api/login-link` `{ token }`: which account a login link would sign in, without spending it, and the browser's current session.
 * - `POST /account/api/session` `{ token }`: spends a login link for a session (cookie `__Host-mg_session`).
 * - `POST /account/api/session/oidc` `{ idToken, nonceVerifier }`: exchanges an OpenID Connect ID token, once, for a session.
 * - `GET /account/api/session`: the current session (the page recovers its CSRF token after a reload), 204 when none.
 * - `POST /account/api/logout`: ends the session on the server and clears the cookie.
 * A sign-in in a browser that has a live session ends it, and so needs its CSRF token (else 403).
 * (The CSRF guard of the two doors is app-wide: `src/http/csrf.ts`, registered in `app.ts`.)
 * Needs @fastify/cookie registered on the app.
 */
export function registerSessionRoutes(app: FastifyInstance, services: Services): void {
  const { config, sessions } = services;
  const cookie = sessions.cookie;
  if (cookie.warning) services.log.warn({ cookie: cookie.name, publicUrl: config.publicUrl }, cookie.warning);

  const cookieOptions: CookieSerializeOptions = { path: '/', httpOnly: true, sameSite: 'strict', secure: cookie.secure };
  const view = (s: SessionView) => ({ csrfToken: s.csrfToken, expiresAt: s.expiresAt.toISOString(), account: s.account });
  const noStore = (reply: FastifyReply) => reply.header('cache-control', 'no-store');
  /** The browser's live session, which a sign-in or logout ends (403 without its CSRF token). */
  const ending = async (req: FastifyRequest) => {
    const live = await sessions.endable(req.cookies[cookie.name]);
    if (live && !csrfMatches(live.csrfToken, csrfTokenOf(req))) throw csrfRefused();
    return live?.sessionId ?? null;
  };
  /** The body's string fields, or 400 INVALID_INPUT naming the missing ones. */
  const fields = <K extends string>(req: FastifyRequest, names: K[], message: string): Record<K, string> => {
    const body = req.body as Record<string, unknown> | null;
    const ok = !!body && typeof body === 'object' && !Array.isArray(body);
    const missing = names.filter((n) => !ok || typeof body[n] !== 'string');
    if (missing.length) throw new AppError('INVALID_INPUT', message, Object.fromEntries(missing.map((n) => [n, 'required string'])));
    return body as Record<K, string>;
  };
  const signedIn = (reply: FastifyReply, started: SessionView & { sessionId: string }) => {
    noStore(reply).setCookie(cookie.name, started.sessionId, { ...cookieOptions, maxAge: sessions.sessionSeconds });
    return view(started);
  };

  app.get('/account/config.json', async (_req, reply) => {
    reply.header('cache-control', 'no-cache');
    const oidc = config.oidc?.clientId ? { issuer: config.oidc.issuer, clientId: config.oidc.clientId } : null;
    return { oidc, loginLinks: true };
  });

  app.post('/account/api/login-link', { bodyLimit: 4 * 1024 }, async (req, reply) => {
    const { token } = fields(req, ['token'], 'Send { "token": "<the login link token>" }.');
    const link = await sessions.peek(token);
    noStore(reply);
    // And the browser's own session, if live: the page asks before a link switches accounts.
    const id = req.cookies[cookie.name];
    const current = id
      ? await sessions.resolve(id).catch((err: unknown) => (isAppError(err) && err.code === 'UNAUTHENTICATED' ? null : Promise.reject(err)))
      : null;
    return { account: link.account, expiresAt: link.expiresAt.toISOString(), session: current && view(current) };
  });

  app.post('/account/api/session', { bodyLimit: 4 * 1024 }, async (req, reply) => {
    const { token } = fields(req, ['token'], 'Send { "token": "<the login link token>" }.');
    return signedIn(reply, await sessions.start(token, await ending(req)));
  });

  app.post('/account/api/session/oidc', { bodyLimit: 16 * 1024 }, async (req, reply) => {
    const body = fields(
      req,
      ['idToken', 'nonceVerifier'],
      'Send { "idToken": "<the ID token>", "nonceVerifier": "<the secret whose SHA-256 is its nonce>" }.',
    );
    return signedIn(reply, await sessions.startWithIdToken(body.idToken, body.nonceVerifier, await ending(req)));
  });

  // "Not signed in" is an answer, not an error: 204, so a signed-out page logs no failed request.
  app.get('/account/api/session', async (req, reply) => {
    noStore(reply);
    const id = req.cookies[cookie.name];
    if (!id) return reply.status(204).send();
    const live = await sessions.resolve(id).catch((err: unknown) => {
      if (isAppError(err) && err.code === 'UNAUTHENTICATED') return null;
      throw err;
    });
    // An ended or expired session's cookie is cleared, so the browser stops sending it.
    if (!live) return reply.clearCookie(cookie.name, cookieOptions).status(204).send();
    return view(live);
  });

  app.post('/account/api/logout', async (req, reply) => {
    noStore(reply);
    // A live session is ended only with its CSRF token (a dead one has nothing left to end).
    const live = await ending(req);
    if (live) await sessions.end(live);
    return reply.clearCookie(cookie.name, cookieOptions).status(204).send();
  });
}
