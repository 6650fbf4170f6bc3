import { resolve } from 'node:path';
import { z } from 'zod';
import { isProxyAddress, parseAllowHosts } from './addresses.js';

const PARSE_PROVIDER_NAMES = ['builtin', 'cobalt', 'ytdlp'] as const;
const TRANSCRIBE_PROVIDER_NAMES = ['openai', 'deepgram', 'assemblyai', 'local'] as const;

const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');
const seconds = (def: number) =>
  z.coerce
    .number()
    .positive()
    .max(7 * 24 * 3600)
    .default(def);
const list = (allowed: readonly string[]) =>
  z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((p) => p.trim().toLowerCase())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(allowed as [string, ...string[]])));
const url = z.url({ protocol: /^https?$/ });

/** TRUST_PROXY: a hop count (1 or more), or proxies' addresses separated by commas; each entry is checked on its own. */
const proxyTrust = z.string().transform((text, ctx): number | string[] => {
  const value = text.trim();
  if (/^\d+$/.test(value)) {
    if (Number(value) >= 1) return Number(value);
    ctx.addIssue({ code: 'custom', message: 'a hop count must be at least 1 (unset: no proxy is trusted)' });
    return z.NEVER;
  }
  const entries = value.split(',').map((e) => e.trim().toLowerCase());
  entries.forEach((entry, i) => {
    if (!isProxyAddress(entry))
      ctx.addIssue({
        code: 'custom',
        path: [i],
        message: 'must be an IP address or CIDR range (or loopback, linklocal, uniquelocal); the list is separated by commas',
      });
  });
  return entries;
});

/** Every environment variable the service reads, with its default. One line of doc each in README. */
const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  /** PostgreSQL connection string; unset: embedded PGlite in MEDIAGATE_DATA_DIR. */
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  /** A read replica of DATABASE_URL for analysts' reads (credit history, usage, the CSV export, account lists); unset: the primary. */
  DATABASE_READ_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  MEDIAGATE_DATA_DIR: z.string().min(1).default('./.mediagate'),
  /** Connections of the ledger's and key lookups' own pool on PostgreSQL (default 10); the embedded database uses 1. */
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).optional(),
  /** While a batch of holds or captures is written, those arriving within this many milliseconds share the next statement; 0: one statement each. */
  LEDGER_BATCH_WINDOW_MS: z.coerce.number().min(0).max(50).default(1),
  /** How long a looked-up API key is trusted before it is read again (changes clear it at once through notifications); 0: no cache. */
  API_KEY_CACHE_SECONDS: z.coerce.number().min(0).max(3600).default(30),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: z.coerce.number().int().min(0).max(65535).default(4000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Server secret for hashing API keys (≥ 32 characters). */
  API_KEY_PEPPER: z.string().min(32, 'must be at least 32 characters').optional(),
  PARSE_PROVIDERS: list(PARSE_PROVIDER_NAMES).default(['builtin']),
  TRANSCRIBE_PROVIDERS: list(TRANSCRIBE_PROVIDER_NAMES).optional(),
  /** A self-hosted cobalt instance's root (where it answers POST /), and its key if it requires one. */
  COBALT_API_URL: url.optional(),
  COBALT_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: url.default('https://api.openai.com/v1'),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_TRANSCRIBE_MODEL: z.string().min(1).default('whisper-1'),
  /** Deepgram: key, API origin (the adapter adds /v1/listen) and model. */
  DEEPGRAM_API_KEY: z.string().min(1).optional(),
  DEEPGRAM_BASE_URL: url.default('https://api.deepgram.com'),
  DEEPGRAM_MODEL: z.string().min(1).default('nova-3'),
  /** AssemblyAI: key and API origin (the adapter adds /v2/...). */
  ASSEMBLYAI_API_KEY: z.string().min(1).optional(),
  ASSEMBLYAI_BASE_URL: url.default('https://api.assemblyai.com'),
  ASSEMBLYAI_POLL_SECONDS: z.coerce.number().positive().max(60).default(3),
  /** Largest audio upload an OpenAI-compatible server accepts (OpenAI: 25 MB). */
  OPENAI_MAX_UPLOAD_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(25 * 1024 * 1024),
  /** Audio longer than this is cut at pauses into pieces transcribed in parallel, OPENAI_CONCURRENCY at a time. */
  OPENAI_PIECE_SECONDS: z.coerce
    .number()
    .int()
    .min(30)
    .max(24 * 3600)
    .default(600),
  OPENAI_CONCURRENCY: z.coerce.number().int().min(1).max(32).default(4),
  PARSE_TIMEOUT_SECONDS: seconds(60),
  TRANSCRIBE_TIMEOUT_SECONDS: seconds(3600),
  SWEEP_INTERVAL_SECONDS: seconds(30),
  /** On SIGTERM/SIGINT: how long requests and queued transcriptions in progress may take to finish before they are interrupted. */
  SHUTDOWN_GRACE_SECONDS: seconds(30),
  /** Queued transcriptions one instance works at once; 0: none here (a separate `mediagate worker` works them). */
  WORKER_CONCURRENCY: z.coerce.number().int().min(0).max(64).default(2),
  PRICE_PARSE_CREDITS: z.coerce.number().int().min(0).default(1),
  PRICE_TRANSCRIBE_CREDITS_PER_MINUTE: z.coerce.number().int().min(0).default(1),
  /** host:port entries that caller URLs may reach although private or loopback. */
  FETCH_ALLOW_HOSTS: z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((p) => p.trim().toLowerCase())
        .filter(Boolean),
    )
    .pipe(
      z.array(
        z
          .string()
          .regex(/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+):\d{1,5}$/, 'entries must be host:port')
          .refine((e) => Number(e.slice(e.lastIndexOf(':') + 1)) <= 65535, 'ports go up to 65535')
          .refine((e) => {
            try {
              parseAllowHosts([e]);
              return true;
            } catch {
              return false;
            }
          }, 'entries must be host:port with a valid host'),
      ),
    )
    .default([]),
  /** Largest page (HTML) the builtin parser reads. */
  PAGE_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(5 * 1024 * 1024),
  /** Largest HLS playlist or DASH manifest the builtin parser reads. */
  MANIFEST_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  /** Items of a multi-item post (gallery, playlist) listed at most; the rest are counted in itemsTotal. */
  PARSE_MAX_ITEMS: z.coerce.number().int().min(1).max(500).default(50),
  /** Bytes and seconds one ffprobe run may read and take when a parse probes media. */
  PROBE_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(16 * 1024 * 1024),
  PROBE_TIMEOUT_SECONDS: seconds(10),
  /** Formats probed at most per parse while looking for a silent one (mode mute). */
  PROBE_MAX_CANDIDATES: z.coerce.number().int().min(0).max(20).default(3),
  /** Bytes all probes of the process may hold at once (fetched media parts); a probe that cannot have more is given up. */
  PROBE_MEMORY_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .default(32 * 1024 * 1024)
    .describe(
      'Bytes of media all probes of one gateway process may hold in memory at once, in bytes (default 33554432, 32 MiB). A probe that cannot have the bytes it needs at once is given up: the format’s size, length, codecs and sound stay null, the parse goes on.',
    ),
  /** Probes running at once in the process; past it a probe is skipped, not waited for. */
  PROBE_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .default(64)
    .describe(
      'Media probes one gateway process runs at once (default 64). A probe past it is skipped at once, never waited for: the format’s unknown fields stay null.',
    ),
  /** Probes one account may have running at once; past it its probes are skipped. */
  PROBE_MAX_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .min(1)
    .default(8)
    .describe(
      'Media probes one account may have running at once in one gateway process (default 8; a parse in mode mute runs up to PROBE_MAX_CANDIDATES of them). Past it the account’s probes are skipped: unknown fields stay null.',
    ),
  /** ffprobe processes probes may run at once (the fallback for what the in-process reader cannot read). */
  PROBE_FFPROBE_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(0)
    .default(2)
    .describe(
      'ffprobe processes media probes may run at once in one gateway process (default 2; 0: never), for what the in-process reader cannot read (each may take tens of MiB of its own). A probe that finds none free is given up at once.',
    ),
  /** Largest part of a file (an MP4's moov box, a playlist's first segment) the in-process reader loads; a larger one is left to ffprobe's streaming read. */
  PROBE_MAX_PART_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .default(4 * 1024 * 1024)
    .describe(
      'Largest single part of a media file the in-process reader loads into memory, in bytes (default 4194304, 4 MiB): an MP4’s moov box, an HLS playlist’s first segment. A larger part is read by ffprobe as a stream through the gateway’s relay, within what is left of PROBE_MAX_BYTES, or given up.',
    ),
  /** Time one webhook delivery may take, and the first wait before a failed one is tried again (it doubles, for more than a day). */
  WEBHOOK_TIMEOUT_SECONDS: seconds(10),
  WEBHOOK_RETRY_DELAY_SECONDS: seconds(30),
  /** Largest media file downloaded for transcription. */
  MEDIA_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024 * 1024),
  GRAPHQL_INTROSPECTION: bool.optional(),
  GRAPHQL_MAX_DEPTH: z.coerce.number().int().positive().default(10),
  GRAPHQL_MAX_ALIASES: z.coerce.number().int().positive().default(15),
  GRAPHQL_MAX_TOKENS: z.coerce.number().int().positive().default(1000),
  /** Largest estimated cost of one operation (graphql-armor: fields weighted by depth, lists by a literal `first`). */
  GRAPHQL_MAX_COST: z.coerce.number().int().positive().default(30000),
  /** Most directives (`@include`, `@skip`, …) in one operation. */
  GRAPHQL_MAX_DIRECTIVES: z.coerce.number().int().positive().default(50),
  /** A trusted-documents manifest (graphql-codegen client preset's persisted-documents.json, or Apollo's persisted query manifest); its documents may be sent by hash alone. */
  GRAPHQL_PERSISTED_DOCUMENTS: z.string().min(1).optional(),
  /** true: only trusted documents run (the manifest's and the account area's own), except for analysts and admins. */
  GRAPHQL_TRUSTED_DOCUMENTS_ONLY: bool.optional(),
  /** How long a document registered through automatic persisted queries is kept (in memory, and in Redis with REDIS_URL). */
  GRAPHQL_APQ_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 3600)
    .default(24 * 3600),
  FFMPEG_PATH: z.string().min(1).default('ffmpeg'),
  FFPROBE_PATH: z.string().min(1).default('ffprobe'),
  POCKETSPHINX_PATH: z.string().min(1).default('pocketsphinx_continuous'),
  YTDLP_PATH: z.string().min(1).default('yt-dlp'),
  /** Requests per minute per API key, and per client address before authentication. */
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().positive().default(120),
  RATE_LIMIT_IP_PER_MINUTE: z.coerce.number().int().positive().default(600),
  /** Proxies whose X-Forwarded-For names the client (its address is what the per-address limit counts): a hop count, or their addresses; unset: none. */
  TRUST_PROXY: proxyTrust.optional(),
  /** OpenID Connect sign-in for frontends: the issuer, the audience tokens must name, and (optional) the JWKS URL. */
  OIDC_ISSUER: url.optional(),
  OIDC_AUDIENCE: z.string().min(1).optional(),
  OIDC_JWKS_URL: url.optional(),
  /** The account page's public client id at the OIDC provider; without it the page offers no OIDC sign-in. */
  OIDC_CLIENT_ID: z.string().min(1).optional(),
  /** The gateway's address as browsers reach it (login links point there); default http://localhost:PORT. */
  PUBLIC_URL: url.refine((u) => !/[?#]/.test(u), 'must have no query or fragment').optional(),
  /** How long a login link (mediagate account login-link) stays usable, and how long the session it opens lasts. */
  LOGIN_LINK_MINUTES: z.coerce
    .number()
    .positive()
    .max(24 * 60)
    .default(10),
  SESSION_HOURS: z.coerce
    .number()
    .positive()
    .max(30 * 24)
    .default(8),
  /** When set, GET /metrics asks for `Authorization: Bearer <METRICS_TOKEN>`. */
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Shares rate-limit counters between instances. */
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// URL')
    .optional(),
  /** Set: traces go there over OTLP/HTTP (JSON); unset, nothing of OpenTelemetry is loaded. The SDK reads the other OTEL_* variables itself. */
  OTEL_EXPORTER_OTLP_ENDPOINT: url.optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default('mediagate'),
  /** Headers for the collector (`key=value,...`), often its API key; read by the SDK, validated and masked here. */
  OTEL_EXPORTER_OTLP_HEADERS: z
    .string()
    .regex(/^[^=,]+=[^,]*(,[^=,]+=[^,]*)*$/, 'must be key=value pairs separated by commas')
    .optional(),
});

type Env = z.output<typeof envSchema>;
type Variable = keyof Env;

/**
 * Variables whose whole value is a secret: `mediagate config check` prints them masked. Every URL-valued
 * variable also has its password and query values masked (DATABASE_URL, REDIS_URL, ...).
 */
export const SECRET_VARIABLES: readonly Variable[] = [
  'API_KEY_PEPPER',
  'COBALT_API_KEY',
  'OPENAI_API_KEY',
  'DEEPGRAM_API_KEY',
  'ASSEMBLYAI_API_KEY',
  'METRICS_TOKEN',
  'OTEL_EXPORTER_OTLP_HEADERS',
];

/**
 * Rules between variables. A rule runs only when every variable it reads is valid on its own, so a
 * mistake is reported once, beside every other problem, instead of after the others are fixed.
 */
const CROSS_FIELD_RULES: { reads: Variable[]; field: Variable; message: string; broken: (e: Env) => boolean }[] = [
  {
    reads: ['DATABASE_READ_URL', 'DATABASE_URL'],
    field: 'DATABASE_READ_URL',
    message: 'requires DATABASE_URL (the embedded database has no replica)',
    broken: (e) => !!e.DATABASE_READ_URL && !e.DATABASE_URL,
  },
  {
    reads: ['NODE_ENV', 'API_KEY_PEPPER'],
    field: 'API_KEY_PEPPER',
    message: 'required when NODE_ENV=production',
    broken: (e) => e.NODE_ENV === 'production' && !e.API_KEY_PEPPER,
  },
  {
    reads: ['OIDC_ISSUER', 'OIDC_AUDIENCE'],
    field: 'OIDC_AUDIENCE',
    message: 'required when OIDC_ISSUER is set (set both, or neither)',
    broken: (e) => !!e.OIDC_ISSUER && !e.OIDC_AUDIENCE,
  },
  {
    reads: ['OIDC_ISSUER', 'OIDC_AUDIENCE'],
    field: 'OIDC_ISSUER',
    message: 'required when OIDC_AUDIENCE is set (set both, or neither)',
    broken: (e) => !e.OIDC_ISSUER && !!e.OIDC_AUDIENCE,
  },
  {
    reads: ['OIDC_CLIENT_ID', 'OIDC_ISSUER'],
    field: 'OIDC_CLIENT_ID',
    message: 'requires OIDC_ISSUER',
    broken: (e) => !!e.OIDC_CLIENT_ID && !e.OIDC_ISSUER,
  },
  {
    reads: ['PROBE_MAX_PART_BYTES', 'PROBE_MEMORY_BYTES'],
    field: 'PROBE_MAX_PART_BYTES',
    message: 'must be at most PROBE_MEMORY_BYTES (a part larger than all probes may hold could never be read)',
    broken: (e) => e.PROBE_MAX_PART_BYTES > e.PROBE_MEMORY_BYTES,
  },
  {
    reads: ['PARSE_PROVIDERS', 'COBALT_API_URL'],
    field: 'COBALT_API_URL',
    message: 'required when PARSE_PROVIDERS includes cobalt',
    broken: (e) => e.PARSE_PROVIDERS.includes('cobalt') && !e.COBALT_API_URL,
  },
  {
    reads: ['TRANSCRIBE_PROVIDERS', 'DEEPGRAM_API_KEY'],
    field: 'DEEPGRAM_API_KEY',
    message: 'required when TRANSCRIBE_PROVIDERS includes deepgram',
    broken: (e) => !!e.TRANSCRIBE_PROVIDERS?.includes('deepgram') && !e.DEEPGRAM_API_KEY,
  },
  {
    reads: ['TRANSCRIBE_PROVIDERS', 'ASSEMBLYAI_API_KEY'],
    field: 'ASSEMBLYAI_API_KEY',
    message: 'required when TRANSCRIBE_PROVIDERS includes assemblyai',
    broken: (e) => !!e.TRANSCRIBE_PROVIDERS?.includes('assemblyai') && !e.ASSEMBLYAI_API_KEY,
  },
];

/** The name of every variable the service reads (the container files and the README are checked against it). */
export const CONFIG_VARIABLES: readonly string[] = Object.freeze(Object.keys(envSchema.shape));

/** One thing wrong with the configuration: the variable concerned and what is wrong (never its value). */
export interface ConfigProblem {
  field: string;
  message: string;
}

export class ConfigError extends Error {
  /** `FIELD: message` lines. */
  readonly problems: string[];
  readonly issues: readonly ConfigProblem[];
  /** Each problem as a ConfigProblem or as a `FIELD: message` line. */
  constructor(problemsFound: readonly (ConfigProblem | string)[]) {
    const issues = problemsFound.map((p) =>
      typeof p === 'string' ? { field: p.split(':')[0], message: p.slice(p.indexOf(':') + 1).trim() } : p,
    );
    const problems = issues.map((p) => `${p.field}: ${p.message}`);
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
    this.issues = issues;
  }
}

/**
 * The settings the environment gives, grouped and in the code's units (milliseconds), with the
 * defaults that depend on other variables. The one mapping from variables to fields: `Settings`
 * and `Config` are its type. `given` says whether a variable was set at all (not defaulted).
 */
function settingsOf(e: Env, given: (name: Variable) => boolean) {
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
    },
    ffmpegPath: e.FFMPEG_PATH,
    ffprobePath: e.FFPROBE_PATH,
    pocketsphinxPath: e.POCKETSPHINX_PATH,
    ytdlpPath: e.YTDLP_PATH,
    rateLimits: { perKeyPerMinute: e.RATE_LIMIT_PER_MINUTE, perIpPerMinute: e.RATE_LIMIT_IP_PER_MINUTE },
    /** Which proxies name the client in X-Forwarded-For (null: none; the connection's peer is the client). */
    trustProxy: e.TRUST_PROXY ?? null,
    redisUrl: e.REDIS_URL ?? null,
    metricsToken: e.METRICS_TOKEN ?? null,
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

/** What the environment says, read without touching the disk or PATH (readConfig, loadConfig). */
export type Settings = Readonly<ReturnType<typeof settingsOf>>;

/**
 * What the processes run with: the settings, plus the two things only the machine can say, added once
 * at startup by prepareConfig (local-config.ts): the pepper kept beside the data when API_KEY_PEPPER
 * is unset, and the offline recogniser when no transcription provider is named or configured.
 */
export type Config = Readonly<
  Omit<Settings, 'apiKeyPepper' | 'transcribeProviders'> & { apiKeyPepper: string; transcribeProviders: readonly string[] }
>;

/** What one reading of the environment found: the settings when they are valid, and every problem. */
export interface ConfigReading {
  settings: Settings | null;
  problems: ConfigProblem[];
  /** Each variable's effective value (defaults applied); an invalid one keeps the text given. */
  variables: Partial<Record<Variable, unknown>>;
  invalid: ReadonlySet<Variable>;
}

/** Reads and validates the environment; lists every problem at once. No side effects: see prepareConfig. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Settings {
  const reading = readConfig(env);
  if (!reading.settings) throw new ConfigError(reading.problems);
  return reading.settings;
}

/**
 * Numbers read from the environment, said in an operator's words ("must be a whole number") rather
 * than zod's ("expected int, received number"); null keeps zod's message. Never the value given.
 */
function numberProblem(issue: z.core.$ZodRawIssue): string | null {
  if (issue.code === 'invalid_type' && issue.expected === 'number') return 'must be a number';
  if (issue.code === 'invalid_type' && issue.expected === 'int') return 'must be a whole number';
  if (issue.code === 'too_small' && issue.origin === 'number')
    return `must be ${issue.inclusive ? 'at least' : 'more than'} ${issue.minimum}`;
  if (issue.code === 'too_big' && issue.origin === 'number') return `must be ${issue.inclusive ? 'at most' : 'less than'} ${issue.maximum}`;
  return null;
}

/**
 * One pass over every variable, then every rule between them on the variables that are valid, so the
 * first run lists all problems. `mediagate config check` prints the reading; loadConfig throws on it.
 */
export function readConfig(env: NodeJS.ProcessEnv = process.env): ConfigReading {
  const raw = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const problems: ConfigProblem[] = [];
  const invalid = new Set<Variable>();
  const variables: Partial<Record<Variable, unknown>> = {};
  for (const name of Object.keys(envSchema.shape) as Variable[]) {
    const parsed = envSchema.shape[name].safeParse(raw[name], { error: numberProblem });
    if (parsed.success) {
      variables[name] = parsed.data;
    } else {
      invalid.add(name);
      variables[name] = raw[name];
      for (const issue of parsed.error.issues) problems.push({ field: [name, ...issue.path].join('.'), message: issue.message });
    }
  }
  const e = variables as Env;
  for (const rule of CROSS_FIELD_RULES) {
    if (rule.reads.some((name) => invalid.has(name))) continue;
    if (rule.broken(e)) problems.push({ field: rule.field, message: rule.message });
  }
  if (problems.length) return { settings: null, problems, variables, invalid };
  const settings = settingsOf(e, (name) => name in raw);
  Object.assign(variables, {
    MEDIAGATE_DATA_DIR: settings.dataDir,
    GRAPHQL_INTROSPECTION: settings.graphql.introspection,
    PUBLIC_URL: settings.publicUrl,
    ...(settings.transcribeProviders ? { TRANSCRIBE_PROVIDERS: settings.transcribeProviders } : {}),
  } satisfies Partial<Record<Variable, unknown>>);
  return { settings: Object.freeze(settings), problems, variables, invalid };
}
