import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { TrustFunction } from '../net/client-address.js';
import type { RateLimits } from '../http/rate-limit.js';
import type { Services } from '../modules/services.js';
import { startApollo } from './apollo.js';
import { ApqCache } from './apq-cache.js';
import { apqRegistrationPlugin } from './apq-registration.plugin.js';
import { documentCache } from './documents.js';
import { formatGraphqlError } from './errors.js';
import { registerGraphqlHttp } from './http-route.js';
import { compilingExecutor, interpretingExecutor } from './jit-executor.js';
import { landingPage } from './landing-page.js';
import { operationLimits } from './limits.js';
import { loadBuiltManifest, loadManifestFile, TrustedDocuments } from './persisted-documents.js';
import { buildGraphqlSchema, type ResolverClasses } from './schema.js';
import { registerSubscriptions } from './websocket.js';

/** The account area's own manifest, written by `npm run build` beside the page (ui/build.mjs). */
function accountPageManifest(): string | null {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, '..', 'account-ui'), join(here, '..', '..', 'dist', 'account-ui')].map((dir) =>
    join(dir, 'persisted-documents.json'),
  );
  return candidates.find((file) => existsSync(file)) ?? null;
}

/**
 * The persisted queries' own Redis (GRAPHQL_APQ_REDIS_URL), closed with the app; null without one.
 * Failed commands are the cache's to report (apq-cache.ts), once until it is back.
 */
function apqRedis(url: string | null, app: FastifyInstance): Redis | null {
  if (!url) return null;
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  app.addHook('onClose', async () => redis.disconnect());
  return redis;
}

/**
 * Both GraphQL doors on one schema, with the same limits, error mapper and trusted documents: Apollo
 * Server over HTTP (apollo.ts, http-route.ts) and graphql-ws over WebSocket (websocket.ts). Throws
 * when GRAPHQL_PERSISTED_DOCUMENTS names a manifest that cannot be read or holds a bad document.
 */
export async function registerGraphqlDoors(
  app: FastifyInstance,
  {
    services,
    resolvers,
    limits,
    trustProxy,
  }: { services: Services; resolvers: ResolverClasses; limits: RateLimits; trustProxy: TrustFunction },
): Promise<void> {
  const { config, log } = services;
  const schema = await buildGraphqlSchema(resolvers);
  const operations = operationLimits(config.graphql, schema);
  const documents = documentCache(schema, operations, config.graphql);
  const formatError = formatGraphqlError(log);
  const format = (error: Parameters<typeof formatError>[0]) => operations.hideSuggestions(formatError(error));
  const manifests = [loadBuiltManifest(accountPageManifest(), schema, log)];
  if (config.graphql.persistedDocuments) manifests.push(loadManifestFile(config.graphql.persistedDocuments, schema));
  const trusted = new TrustedDocuments(manifests, config.graphql.trustedDocumentsOnly);
  registerSubscriptions(app, { schema, services, documents, format, limits, trustProxy, trusted });

  const page = landingPage(schema, config);
  const apqCache = new ApqCache(trusted, apqRedis(config.graphql.apqRedisUrl, app), config.graphql.apqTtlSeconds, config.apiKeyPepper, log);
  const apollo = await startApollo({
    schema,
    // Compiled documents run outside graphql-js, where OpenTelemetry's GraphQL instrumentation
    // would not see them: with tracing on, every operation keeps its graphql-js execute span.
    execute: config.telemetry ? interpretingExecutor(schema) : compilingExecutor(schema),
    limits: operations,
    introspection: config.graphql.introspection,
    format,
    landingPage: page,
    apqCache,
    apqTtlSeconds: config.graphql.apqTtlSeconds,
    apqRegistration: apqRegistrationPlugin({
      cache: apqCache,
      checkCost: operations.checkCost,
      limits,
      perDay: config.graphql.apqRegistrationsPerDay,
      bytesPerDay: config.graphql.apqBytesPerDay,
    }),
    metrics: { registry: services.metrics.registry, operationNames: trusted.names },
    log: log as Logger,
    env: config.env,
  });
  app.addHook('onClose', () => apollo.stop());
  registerGraphqlHttp(app, { apollo, services, trusted, landingPage: page !== null });
}
