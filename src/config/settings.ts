import { resolve } from 'node:path';
import type { Env, Variable } from './env.js';

/**
 * The settings the environment gives, grouped and in the code's units (milliseconds), with the
 * defaults that depend on other variables. The one mapping from variables to fields: `Settings`
 * and `Config` are its type. `given` says whether a variable was set at all (not defaulted).
 */
export function settingsOf(e: Env, given: (name: Variable) => boolean) {
  const configuredTranscription = [
    ...(e.OPENAI_API_KEY || given('OPENAI_BASE_URL') ? ['openai'] : []),
    ...(e.DEEPGRAM_API_KEY ? ['deepgram'] : []),
    ...(e.ASSEMBLYAI_API_KEY ? ['assemblyai'] : []),
  ];
  return {
    env: e.NODE_ENV,
    databaseUrl: e.DATABASE_URL ?? null,
    /** Where analysts' reads go (null: the primary). */
    databaseReadUrl: e.DATABASE_READ_URL ?? null,
    dataDir: resolve(e.MEDIAGATE_DATA_DIR),
    /** The hot path's pool (null: DEFAULT_HOT_POOL_SIZE on PostgreSQL, 1 embedded). */
    databasePoolSize: e.DATABASE_POOL_SIZE ?? null,
    /** 0: every hold and capture is its own statement. */
    ledgerBatchWindowMs: e.LEDGER_BATCH_WINDOW_MS,
    /** 0: API keys are looked up on every request. */
    apiKeyCacheMs: e.API_KEY_CACHE_SECONDS * 1000,
    host: e.HOST,
    port: e.PORT,
    logLevel: e.LOG_LEVEL as string,
    /** null: unset; outside production the process keeps a generated one (prepareConfig, local-config.ts). */
    apiKeyPepper: e.API_KEY_PEPPER ?? null,
    parseProviders: e.PARSE_PROVIDERS as readonly string[],
    /** null: none named or configured; the process adds the offline recogniser if it is installed (prepareConfig). */
    transcribeProviders: (e.TRANSCRIBE_PROVIDERS ?? (configuredTranscription.length ? configuredTranscription : null)) as
      | readonly string[]
      | null,
    openai: {
      baseUrl: e.OPENAI_BASE_URL.replace(/\/+$/, ''),
      apiKey: e.OPENAI_API_KEY ?? null,
      model: e.OPENAI_TRANSCRIBE_MODEL,
      maxUploadBytes: e.OPENAI_MAX_UPLOAD_BYTES,
      pieceSeconds: e.OPENAI_PIECE_SECONDS,
      concurrency: e.OPENAI_CONCURRENCY,
    },
    cobalt: { apiUrl: e.COBALT_API_URL ?? null, apiKey: e.COBALT_API_KEY ?? null },
    deepgram: { apiKey: e.DEEPGRAM_API_KEY ?? null, baseUrl: e.DEEPGRAM_BASE_URL, model: e.DEEPGRAM_MODEL },
    assemblyai: { apiKey: e.ASSEMBLYAI_API_KEY ?? null, baseUrl: e.ASSEMBLYAI_BASE_URL, pollIntervalMs: e.ASSEMBLYAI_POLL_SECONDS * 1000 },
    parseTimeoutMs: e.PARSE_TIMEOUT_SECONDS * 1000,
    transcribeTimeoutMs: e.TRANSCRIBE_TIMEOUT_SECONDS * 1000,
    sweepIntervalMs: e.SWEEP_INTERVAL_SECONDS * 1000,
    shutdownGraceMs: e.SHUTDOWN_GRACE_SECONDS * 1000,
    workerConcurrency: e.WORKER_CONCURRENCY,
    prices: { parse: e.PRICE_PARSE_CREDITS, transcribePerMinute: e.PRICE_TRANSCRIBE_CREDITS_PER_MINUTE },
    fetchAllowHosts: e.FETCH_ALLOW_HOSTS as readonly string[],
    pageMaxBytes: e.PAGE_MAX_BYTES,
    manifestMaxBytes: e.MANIFEST_MAX_BYTES,
    parseMaxItems: e.PARSE_MAX_ITEMS,
    probe: {
      maxBytes: e.PROBE_MAX_BYTES,
      timeoutMs: e.PROBE_TIMEOUT_SECONDS * 1000,
      maxCandidates: e.PROBE_MAX_CANDIDATES,
      memoryBytes: e.PROBE_MEMORY_BYTES,
      concurrency: e.PROBE_CONCURRENCY,
      maxPerAccount: e.PROBE_MAX_PER_ACCOUNT,
      ffprobeConcurrency: e.PROBE_FFPROBE_CONCURRENCY,
      maxPartBytes: e.PROBE_MAX_PART_BYTES,
    },
    mediaMaxBytes: e.MEDIA_MAX_BYTES,
    /** The bounds of the parse answers' streams (/api/streams/{token}). */
    streams: {
      ttlMs: e.STREAM_TTL_SECONDS * 1000,
      maxMs: e.STREAM_MAX_SECONDS * 1000,
      maxBytes: e.STREAM_MAX_BYTES,
      maxPerAccount: e.STREAM_MAX_PER_ACCOUNT,
      ffmpegConcurrency: e.STREAM_FFMPEG_CONCURRENCY,
    },
    /** What transcriptions may have in the temporary directory at once (bytes, downloads), per process. */
    temp: { maxBytes: e.TEMP_MAX_BYTES, maxDownloads: e.TEMP_MAX_DOWNLOADS },
    transcribeMaxPerAccount: e.TRANSCRIBE_MAX_PER_ACCOUNT,
    webhooks: { timeoutMs: e.WEBHOOK_TIMEOUT_SECONDS * 1000, retryDelaySeconds: e.WEBHOOK_RETRY_DELAY_SECONDS },
    graphql: {
      introspection: e.GRAPHQL_INTROSPECTION ?? e.NODE_ENV !== 'production',
      maxDepth: e.GRAPHQL_MAX_DEPTH,
      maxAliases: e.GRAPHQL_MAX_ALIASES,
      maxTokens: e.GRAPHQL_MAX_TOKENS,
      maxCost: e.GRAPHQL_MAX_COST,
      maxDirectives: e.GRAPHQL_MAX_DIRECTIVES,
      persistedDocuments: e.GRAPHQL_PERSISTED_DOCUMENTS ? resolve(e.GRAPHQL_PERSISTED_DOCUMENTS) : null,
      trustedDocumentsOnly: e.GRAPHQL_TRUSTED_DOCUMENTS_ONLY ?? false,
      apqTtlSeconds: e.GRAPHQL_APQ_TTL_SECONDS,
      /** null: each process keeps its own persisted queries. */
      apqRedisUrl: e.GRAPHQL_APQ_REDIS_URL ?? null,
      apqRegistrationsPerDay: e.GRAPHQL_APQ_REGISTRATIONS_PER_DAY,
      apqBytesPerDay: e.GRAPHQL_APQ_BYTES_PER_DAY,
    },
    ffmpegPath: e.FFMPEG_PATH,
    ffprobePath: e.FFPROBE_PATH,
    pocketsphinxPath: e.POCKETSPHINX_PATH,
    ytdlpPath: e.YTDLP_PATH,
    rateLimits: {
      perKeyPerMinute: e.RATE_LIMIT_PER_MINUTE,
      perIpPerMinute: e.RATE_LIMIT_IP_PER_MINUTE,
      perAccountPerMinute: e.RATE_LIMIT_ACCOUNT_PER_MINUTE,
    },
    apiKeysPerAccount: e.API_KEYS_PER_ACCOUNT,
    subscriptionsPerAccount: e.SUBSCRIPTIONS_PER_ACCOUNT,
    /** Which proxies name the client in X-Forwarded-For (null: none; the connection's peer is the client). */
    trustProxy: e.TRUST_PROXY ?? null,
    redisUrl: e.REDIS_URL ?? null,
    metricsToken: e.METRICS_TOKEN ?? null,
    /** null: /metrics is served on PORT; else on a listener of its own at metricsHost:metricsPort. */
    metricsPort: e.METRICS_PORT ?? null,
    metricsHost: e.METRICS_HOST ?? e.HOST,
    oidc:
      e.OIDC_ISSUER && e.OIDC_AUDIENCE
        ? { issuer: e.OIDC_ISSUER, audience: e.OIDC_AUDIENCE, jwksUrl: e.OIDC_JWKS_URL ?? null, clientId: e.OIDC_CLIENT_ID ?? null }
        : null,
    /** Without a trailing slash. */
    publicUrl: (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
    sessions: { loginLinkMinutes: e.LOGIN_LINK_MINUTES, sessionHours: e.SESSION_HOURS },
    /** OpenTelemetry traces; null: none, and the SDK is never loaded. */
    telemetry: e.OTEL_EXPORTER_OTLP_ENDPOINT ? { endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: e.OTEL_SERVICE_NAME } : null,
  };
}
