import fastifyHelmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';

/** What a page loads beyond its own scripts and styles, directive by directive (listed in the header in this order). */
type PageSources = Partial<Record<'imgSrc' | 'fontSrc' | 'connectSrc' | 'mediaSrc' | 'formAction', string[]>>;

/**
 * The headers of a page the gateway serves (the account area, the REST reference), set on its own
 * scope so the API keeps its own: a strict Content Security Policy (scripts and styles from this
 * origin only, no framing, no plugins, no <base>) that each page widens only for what it loads, and
 * no Referer sent on.
 */
export async function registerPagePolicy(scope: FastifyInstance, sources: PageSources): Promise<void> {
  await scope.register(fastifyHelmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        ...sources,
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
        objectSrc: ["'none'"],
      },
    },
    crossOriginEmbedderPolicy: false,
    referrerPolicy: { policy: 'no-referrer' },
  });
}
