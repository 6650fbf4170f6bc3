import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config.js';
import { registerPagePolicy } from './page-policy.js';

/** Where `npm run build` put the account area: dist/account-ui, beside the compiled server or above the sources. */
function assetsDir(): string | null {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, '..', 'account-ui'), join(here, '..', '..', 'dist', 'account-ui')];
  return candidates.find((dir) => existsSync(join(dir, 'index.html'))) ?? null;
}

/**
 * The account area at /account: the built page and its assets (no CDN), under a strict Content
 * Security Policy: scripts, styles and connections only from this origin (and the identity
 * provider, which the page talks to for sign-in), no framing, no plugins. The API keeps its own
 * headers; only this scope gets the page's.
 */
export async function registerAccountPage(app: FastifyInstance, config: Config): Promise<void> {
  const root = assetsDir();
  await app.register(async (scope) => {
    const identityProvider = config.oidc ? new URL(config.oidc.issuer).origin : null;
    await registerPagePolicy(scope, {
      // Covers from parse results live on other sites.
      imgSrc: ["'self'", 'data:', 'blob:', 'https:', 'http:'],
      connectSrc: ["'self'", ...(identityProvider ? [identityProvider] : [])],
      // Parse results the gateway streams play from its public address (PUBLIC_URL).
      mediaSrc: ["'self'", new URL(config.publicUrl).origin],
      formAction: ["'self'", ...(identityProvider ? [identityProvider] : [])],
    });
    scope.get('/account', (_req, reply) => reply.redirect('/account/', 301));
    if (!root) {
      // A checkout that was never built: say what to do rather than 404.
      scope.get('/account/', (_req, reply) =>
        reply.status(503).type('text/plain; charset=utf-8').send('The account area is not built: run `npm run build`.'),
      );
      return;
    }
    await scope.register(fastifyStatic, { root, prefix: '/account/', index: ['index.html'], maxAge: '1h', cacheControl: true });
  });
}
