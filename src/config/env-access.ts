import { z } from 'zod';
import { url, proxyTrust } from './kinds.js';

/** Who may call and how often: rate limits, caps per account, proxies, OpenID Connect, sessions, metrics, Redis, traces. */
export const accessVariables = {
  RATE_LIMIT_PER_MINUTE: z.coerce
    .number()
    .int()
    .positive()
    .default(120)
    .describe(
      'Requests per minute per API key, counted once the key is proven (on the WebSocket, each subscribe, per key or signed-in account); over it: `429` with `Retry-After` and `RateLimit` headers.',
    ),
  RATE_LIMIT_IP_PER_MINUTE: z.coerce
    .number()
    .int()
    .positive()
    .default(600)
    .describe(
      'Requests per minute per client address (every request and WebSocket upgrade, before authentication); over it: `429` with `Retry-After`.',
    ),
  RATE_LIMIT_ACCOUNT_PER_MINUTE: z.coerce
    .number()
    .int()
    .positive()
    .default(600)
    .describe(
      'Requests per minute per account, whatever the credential (all its API keys together, its account-area sessions, OpenID Connect tokens; on the WebSocket, each subscribe), counted beside the per-key limit; over it: `429` with `Retry-After` and `RateLimit` headers.',
    ),
  API_KEYS_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .positive()
    .default(50)
    .describe(
      'Live (unrevoked) API keys one account may hold; creating one more (GraphQL `createApiKey`, `mediagate key create`) is refused `403 FORBIDDEN` until one is revoked.',
    ),
  SUBSCRIPTIONS_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .positive()
    .default(50)
    .describe(
      'GraphQL subscriptions (`jobUpdated`) one account may run at once on one instance, over all its sockets; one more is refused `RATE_LIMITED` until one ends.',
    ),
  TRUST_PROXY: proxyTrust.optional().meta({
    description:
      'Proxies whose `X-Forwarded-For` names the client (for the per-address limit): a hop count (`1`: the nearest proxy), or their addresses and CIDR ranges separated by commas (`10.0.0.0/8,192.0.2.7`; also `loopback`, `linklocal`, `uniquelocal`). A hop count believes whoever connects: use it only when nothing reaches the gateway but through the proxies; prefer addresses.',
    unset: "no proxy is trusted: the connection's peer is the client",
  }),
  OIDC_ISSUER: url.optional().meta({
    description:
      'Frontend sign-in: tokens from this OpenID Connect issuer for `OIDC_AUDIENCE` are accepted as Bearer tokens (RS, PS, ES and EdDSA signatures only; an `azp` must name the audience or `OIDC_CLIENT_ID`); the account is made on first sign-in, and without membership it may parse at 720 or 480. A Bearer ID token has the scopes `parse`, `transcribe` and `read`, never `keys`. When the provider does not answer, tokens are refused at once for 30 s before it is asked again.',
    unset: 'API keys and sessions only',
  }),
  OIDC_AUDIENCE: z
    .string()
    .min(1)
    .optional()
    .meta({ description: 'The audience tokens from `OIDC_ISSUER` must name (set both, or neither).', unset: 'API keys and sessions only' }),
  OIDC_JWKS_URL: url
    .optional()
    .meta({ description: "Where the issuer's signing keys are read.", unset: "the discovery document's `jwks_uri`" }),
  OIDC_CLIENT_ID: z.string().min(1).optional().meta({
    description:
      "The account page's public client id at the OpenID Connect provider (needs `OIDC_ISSUER`); served to the page in `/account/config.json`.",
    unset: 'the account page offers no OpenID Connect sign-in',
  }),
  PUBLIC_URL: url
    .refine((u) => !/[?#]/.test(u), 'must have no query or fragment')
    .optional()
    .meta({
      description:
        "The gateway's address as browsers reach it (http(s), no query); login links point there. The session cookie is `__Host-mg_session` (`Secure`) unless, outside production, this is plain http on another host than `localhost`/`127.0.0.1`: then `mg_session` without `Secure`, with a warning at start.",
      unset: '`http://localhost:<PORT>`',
    }),
  LOGIN_LINK_MINUTES: z.coerce
    .number()
    .positive()
    .max(24 * 60)
    .default(10)
    .describe('How long a login link (`mediagate account login-link`) stays usable, once.'),
  SESSION_HOURS: z.coerce
    .number()
    .positive()
    .max(30 * 24)
    .default(8)
    .describe(
      "How long the account area's session lasts (cookie `__Host-mg_session`: `Secure`, `HttpOnly`, `SameSite=Strict`; changes need the `x-csrf-token` header).",
    ),
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional().meta({
    description:
      'A secret of 16+ characters: `GET /metrics` answers only `Authorization: Bearer <METRICS_TOKEN>` (`401` otherwise). Required when `NODE_ENV=production` unless `METRICS_PORT` serves the metrics on a port of their own.',
    unset: '`/metrics` is open (refused at start-up in production without `METRICS_PORT`)',
  }),
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional().meta({
    description:
      'Serves `GET /metrics` on this port only, on its own listener (the service port then answers `404` there): give Prometheus this port and publish only `PORT`. `METRICS_TOKEN`, when set, is asked there too.',
    unset: '`/metrics` is on `PORT`',
  }),
  METRICS_HOST: z.string().min(1).optional().meta({
    description:
      'The address the `METRICS_PORT` listener binds to: `0.0.0.0` for Prometheus in another pod or container, `127.0.0.1` for a scraper on the same machine.',
    unset: '`HOST`',
  }),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// URL')
    .optional()
    .meta({
      description:
        'Redis shared by every instance for the rate-limit counters and quotas. Run it with `maxmemory-policy noeviction`: an evicted counter is a reset limit, and the `volatile-*` policies evict counters too, since they carry a TTL.',
      unset: 'counted per process',
    }),
  OTEL_EXPORTER_OTLP_ENDPOINT: url.optional().meta({
    description:
      "An OpenTelemetry collector (OTLP/HTTP, e.g. `http://collector:4318`) that traces go to; the SDK's own `OTEL_EXPORTER_OTLP_*` and `OTEL_BSP_*` variables apply.",
    unset: 'no traces, and nothing of OpenTelemetry is loaded',
  }),
  OTEL_SERVICE_NAME: z.string().min(1).default('mediagate').describe('The service name on every trace.'),
  OTEL_EXPORTER_OTLP_HEADERS: z
    .string()
    .regex(/^[^=,]+=[^,]*(,[^=,]+=[^,]*)*$/, 'must be key=value pairs separated by commas')
    .optional()
    .meta({ description: '`key=value,…` headers for the collector (often its API key; masked by `config check`).', unset: 'none' }),
};
