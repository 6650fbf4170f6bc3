import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { buildOpenApi } from '../docs/openapi.js';
import { registerPagePolicy } from './page-policy.js';

/** Where the REST reference lives; its document is at `${DOCS_PREFIX}/json` (and `/yaml`). */
const DOCS_PREFIX = '/docs';

/**
 * The REST reference at /docs: Swagger UI over the OpenAPI document (the one committed as
 * schema/openapi.yaml), with every asset served from the package (no CDN, so it works offline), open
 * to all (CONTRACT.md: no key), under its own Content Security Policy. Swagger UI needs no inline
 * script or style here, so the policy is as strict as the account area's; "Try it out" calls this
 * origin only.
 */
export async function registerDocsPage(app: FastifyInstance): Promise<void> {
  // Its own scope: the `swagger` decoration and these headers stay out of the rest of the app.
  await app.register(async (scope) => {
    await registerPagePolicy(scope, {
      // Swagger UI's icons are data: URIs in its stylesheet.
      imgSrc: ["'self'", 'data:'],
      fontSrc: ["'self'", 'data:'],
      connectSrc: ["'self'"],
      formAction: ["'self'"],
    });
    // Static mode serves the document as it is (its types know OpenAPI 3.0 only; ours is 3.1).
    await scope.register(fastifySwagger, { mode: 'static', specification: { document: buildOpenApi() as never } });
    await scope.register(fastifySwaggerUi, {
      routePrefix: DOCS_PREFIX,
      // No "valid" badge: it would send the document to validator.swagger.io.
      validatorUrl: false,
      // BaseLayout: one document needs no top bar, whose inline SVG logo carries a <style> the policy refuses.
      uiConfig: {
        layout: 'BaseLayout',
        deepLinking: true,
        docExpansion: 'list',
        defaultModelsExpandDepth: 0,
        displayRequestDuration: true,
      },
      theme: { title: 'mediagate REST API' },
    });
  });
}
