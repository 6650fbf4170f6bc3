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

/**
 * Every environment variable the service reads: its rules, its default, and what it does in an
 * operator's words (`.describe`, or `.meta` with `unset` saying what happens without one);
 * docs/configuration.md is generated from it by `npm run schema:write`.
 */
const envSchema = z.object({
  NODE_ENV: z
    .enum(['development', 'production', 'test'])
    .default('development')
    .describe('`production` requires `API_KEY_PEPPER` and turns introspection and the GraphQL landing page off.'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional()
    .meta({
      description: 'PostgreSQL connection string (`postgresql://user:pass@host:5432/db`).',
      unset: 'an embedded PostgreSQL (PGlite) in `MEDIAGATE_DATA_DIR`',
    }),
  DATABASE_READ_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional()
    .meta({
      description:
        "A streaming replica of `DATABASE_URL` for analysts' reads: credit history (GraphQL and the CSV export), usage, account lists. Everything that spends or reads its own writes (holds, jobs, keys, balances, an account list's balances too) stays on the primary. A lagging replica shows history as of its replay point; a replica that is down answers those reads `503`.",
      unset: 'the primary',
    }),
  MEDIAGATE_DATA_DIR: z
    .string()
    .min(1)
    .default('./.mediagate')
    .describe('Where the embedded database, its generated password and the generated development pepper live.'),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).optional().meta({
    description: "Connections of the pool the ledger and key lookups use (named prepared statements), beside the ORM's own.",
    unset: '10 on PostgreSQL, 1 on the embedded database',
  }),
  LEDGER_BATCH_WINDOW_MS: z.coerce
    .number()
    .min(0)
    .max(50)
    .default(1)
    .describe(
      'While a batch of holds (or captures) is being written, the ones that arrive within this many milliseconds share the next statement, each request keeping its own answer; one that finds nothing in flight goes at once. `0`: one statement per hold and per capture.',
    ),
  API_KEY_CACHE_SECONDS: z.coerce
    .number()
    .min(0)
    .max(3600)
    .default(30)
    .describe(
      "How long a looked-up API key is reused; a change to the key, its account's roles or membership clears it at once on every instance (database notifications), and a revoked key can never hold credits. `0`: no cache.",
    ),
  HOST: z.string().min(1).default('0.0.0.0').describe('The address to listen on.'),
  PORT: z.coerce.number().int().min(0).max(65535).default(4000).describe('The port to listen on.'),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`.'),
  API_KEY_PEPPER: z.string().min(32, 'must be at least 32 characters').optional().meta({
    description:
      'The server secret (at least 32 characters) API keys are hashed with, and the webhook signing secrets encrypted with. Required in production.',
    unset: 'generated once in `MEDIAGATE_DATA_DIR` outside production',
  }),
  PARSE_PROVIDERS: list(PARSE_PROVIDER_NAMES)
    .default(['builtin'])
    .describe('Parse providers in failover order: `builtin`, `cobalt`, `ytdlp`.'),
  TRANSCRIBE_PROVIDERS: list(TRANSCRIBE_PROVIDER_NAMES).optional().meta({
    description: 'Transcription providers in failover order: `openai`, `deepgram`, `assemblyai`, `local`.',
    unset:
      'the configured ones (`openai` when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set, `deepgram` and `assemblyai` when their keys are), else `local` when PocketSphinx is installed',
  }),
  COBALT_API_URL: url.optional().meta({
    description: "A self-hosted cobalt instance's root, where it answers `POST /` (required when `PARSE_PROVIDERS` names `cobalt`).",
    unset: 'no cobalt',
  }),
  COBALT_API_KEY: z
    .string()
    .min(1)
    .optional()
    .meta({ description: "The cobalt instance's API key, if it requires one.", unset: 'none sent' }),
  OPENAI_BASE_URL: url
    .default('https://api.openai.com/v1')
    .describe('Any OpenAI-compatible transcription server, including `/v1` (OpenAI, Groq, speaches, LocalAI, a whisper.cpp server).'),
  OPENAI_API_KEY: z.string().min(1).optional().meta({ description: "The OpenAI-compatible server's key.", unset: 'none sent' }),
  OPENAI_TRANSCRIBE_MODEL: z.string().min(1).default('whisper-1').describe('The model the OpenAI-compatible server is asked for.'),
  DEEPGRAM_API_KEY: z.string().min(1).optional().meta({
    description:
      "Deepgram's key (required when `TRANSCRIBE_PROVIDERS` names `deepgram`); the gateway uploads the prepared audio, and speakers are labelled.",
    unset: 'no Deepgram',
  }),
  DEEPGRAM_BASE_URL: url.default('https://api.deepgram.com').describe("Deepgram's API origin; the adapter adds `/v1/listen`."),
  DEEPGRAM_MODEL: z.string().min(1).default('nova-3').describe('The Deepgram model.'),
  ASSEMBLYAI_API_KEY: z.string().min(1).optional().meta({
    description:
      "AssemblyAI's key (required when `TRANSCRIBE_PROVIDERS` names `assemblyai`): the audio is uploaded, then the transcript polled.",
    unset: 'no AssemblyAI',
  }),
  ASSEMBLYAI_BASE_URL: url.default('https://api.assemblyai.com').describe("AssemblyAI's API origin; the adapter adds `/v2/...`."),
  ASSEMBLYAI_POLL_SECONDS: z.coerce
    .number()
    .positive()
    .max(60)
    .default(3)
    .describe('How often an AssemblyAI transcript is polled, in seconds.'),
  OPENAI_MAX_UPLOAD_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(25 * 1024 * 1024)
    .describe("The OpenAI-compatible server's upload cap (OpenAI: 25 MB); pieces are cut small enough to stay under it."),
  OPENAI_PIECE_SECONDS: z.coerce
    .number()
    .int()
    .min(30)
    .max(24 * 3600)
    .default(600)
    .describe('Audio longer than this many seconds is cut at pauses into pieces transcribed in parallel.'),
  OPENAI_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(32)
    .default(4)
    .describe('Pieces of one transcription sent to the OpenAI-compatible server at once.'),
  PARSE_TIMEOUT_SECONDS: seconds(60).describe('A parse past this fails with `504 PROVIDER_TIMEOUT` and releases its hold.'),
  TRANSCRIBE_TIMEOUT_SECONDS: seconds(3600).describe(
    'A transcription past this fails with `504 PROVIDER_TIMEOUT` and releases its hold (also after a crash, by the sweeper).',
  ),
  SWEEP_INTERVAL_SECONDS: seconds(30).describe('How often jobs past their deadline are failed and their holds released.'),
  SHUTDOWN_GRACE_SECONDS: seconds(30).describe(
    'On `SIGTERM`/`SIGINT`, how long requests and queued transcriptions in progress may finish; then requests are answered `503` and transcriptions go back to the queue for another worker.',
  ),
  WORKER_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(0)
    .max(64)
    .default(2)
    .describe(
      'Queued transcriptions one instance works at once. `0`: none (a `serve` beside separate `mediagate worker`s; `worker` refuses it).',
    ),
  PRICE_PARSE_CREDITS: z.coerce.number().int().min(0).default(1).describe('Credits one parse costs.'),
  PRICE_TRANSCRIBE_CREDITS_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .default(1)
    .describe('Credits a transcription costs per started minute of media (at least one minute).'),
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
    .default([])
    .describe(
      "`host:port,…` that callers' URLs may reach although they are private or loopback (self-hosted media, tests). Provider base URLs are the operator's and need no entry.",
    ),
  PAGE_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(5 * 1024 * 1024)
    .describe('Largest page (HTML) a parse reads.'),
  MANIFEST_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024)
    .describe('Largest HLS playlist or DASH manifest a parse reads.'),
  PARSE_MAX_ITEMS: z.coerce
    .number()
    .int()
    .min(1)
    .max(500)
    .default(50)
    .describe('Gallery or playlist items listed at most; the rest are counted in `itemsTotal`.'),
  PROBE_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(16 * 1024 * 1024)
    .describe('Bytes reading one media URL during a parse may fetch (the in-process reader and ffprobe after it together).'),
  PROBE_TIMEOUT_SECONDS: seconds(10).describe('Seconds reading one media URL during a parse may take (both readers together).'),
  PROBE_MAX_CANDIDATES: z.coerce
    .number()
    .int()
    .min(0)
    .max(20)
    .default(3)
    .describe(
      'Formats read at most per parse while looking for a silent one (`mode: mute`), and while checking media a page names only in links, scripts or AMP tags (`0`: such media is never used).',
    ),
  PROBE_MEMORY_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .default(32 * 1024 * 1024)
    .describe(
      'Bytes of media all probes of one gateway process may hold in memory at once. A probe that cannot have the bytes it needs at once is given up: the format’s size, length, codecs and sound stay null, the parse goes on.',
    ),
  PROBE_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .default(64)
    .describe(
      'Media probes one gateway process runs at once. A probe past it is skipped at once, never waited for: the format’s unknown fields stay null.',
    ),
  PROBE_MAX_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .min(1)
    .default(8)
    .describe(
      'Media probes one account may have running at once in one gateway process (a parse in mode `mute` runs up to `PROBE_MAX_CANDIDATES` of them). Past it the account’s probes are skipped: unknown fields stay null.',
    ),
  PROBE_FFPROBE_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(0)
    .default(2)
    .describe(
      'ffprobe processes media probes may run at once in one gateway process (`0`: never), for what the in-process reader cannot read (each may take tens of MiB of its own). A probe that finds none free is given up at once.',
    ),
  PROBE_MAX_PART_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .default(4 * 1024 * 1024)
    .describe(
      'Largest single part of a media file the in-process reader loads into memory: an MP4’s moov box, an HLS playlist’s first segment. A larger part is read by ffprobe as a stream through the gateway’s relay, within what is left of `PROBE_MAX_BYTES`, or given up.',
    ),
  STREAM_TTL_SECONDS: seconds(1800).describe(
    'How long a stream URL of a parse answer (`delivery: "stream"`) stays valid (its `expiresAt`); past it, 410 `STREAM_EXPIRED`.',
  ),
  STREAM_MAX_SECONDS: seconds(4 * 3600).describe(
    'How long one stream may run (a request to `/api/streams/{token}`); past it the connection is cut.',
  ),
  STREAM_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(4 * 1024 * 1024 * 1024)
    .describe(
      'Bytes one stream may send to its caller, and bytes it may read from the source(s); past either, the connection is cut (never ended as if whole).',
    ),
  STREAM_MAX_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .min(1)
    .default(4)
    .describe('Streams one account may have open at once in one gateway process; past it, 429 `RATE_LIMITED` with `Retry-After`.'),
  STREAM_FFMPEG_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(0)
    .default(4)
    .describe(
      'ffmpeg processes streams may run at once in one gateway process (audio taken out, sound left out, tracks joined, manifests remuxed; `0`: none, only pass-through streams). Past it, 503 `PROVIDER_UNAVAILABLE` with `Retry-After`.',
    ),
  WEBHOOK_TIMEOUT_SECONDS: seconds(10).describe('Time one webhook delivery may take.'),
  WEBHOOK_RETRY_DELAY_SECONDS: seconds(30).describe(
    'The first wait before a failed webhook delivery is tried again; it doubles, up to 3 h, for more than a day.',
  ),
  MEDIA_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024 * 1024)
    .describe('Largest media file downloaded for a transcription.'),
  TEMP_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(2 * 1024 * 1024 * 1024)
    .describe(
      'Bytes all transcriptions of one process may have in the temporary directory at once: each download reserves its `Content-Length`, or `MEDIA_MAX_BYTES` when it names none, before its first byte, and its prepared audio reserves 40 kB per second as it is written. A synchronous transcription past it: `503 PROVIDER_UNAVAILABLE` with `Retry-After`, nothing charged; a queued one waits its turn.',
    ),
  TEMP_MAX_DOWNLOADS: z.coerce
    .number()
    .int()
    .min(1)
    .default(4)
    .describe(
      'Media downloads for transcriptions one process runs at once. Past it: `503 PROVIDER_UNAVAILABLE` with `Retry-After` for a synchronous transcription, a queued one waits its turn.',
    ),
  TRANSCRIBE_MAX_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .min(1)
    .default(2)
    .describe(
      'Synchronous transcriptions one account may have running at once in one process. Past it: `429 RATE_LIMITED` with `Retry-After`, nothing held; queued transcriptions (`startTranscription`, `Prefer: respond-async`) are not counted.',
    ),
  GRAPHQL_INTROSPECTION: bool.optional().meta({
    description: 'Introspection and the GraphQL landing page (`true`/`false`).',
    unset: 'on outside production, off in production',
  }),
  GRAPHQL_MAX_DEPTH: z.coerce
    .number()
    .int()
    .positive()
    .default(10)
    .describe('Deepest selection in one operation (graphql-armor), the same on HTTP and WebSocket; past it: `400 INVALID_INPUT`.'),
  GRAPHQL_MAX_ALIASES: z.coerce
    .number()
    .int()
    .positive()
    .default(15)
    .describe('Most aliases in one operation (graphql-armor); past it: `400 INVALID_INPUT`.'),
  GRAPHQL_MAX_TOKENS: z.coerce
    .number()
    .int()
    .positive()
    .default(1000)
    .describe("Most tokens in one operation's text (graphql-js); past it: `400 INVALID_INPUT`."),
  GRAPHQL_MAX_COST: z.coerce
    .number()
    .int()
    .positive()
    .default(30000)
    .describe(
      'Largest estimated cost of one GraphQL operation, weighed with its variables before it runs (refused `400 INVALID_INPUT` past it): a leaf field costs 1, an object 2 plus 1.5 times what it selects, and a page of a list (a field taking `first`) as many times as the rows it asks for, whether `first` is written in the text or given as a variable (at most 100; 20 when not given).',
    ),
  GRAPHQL_MAX_DIRECTIVES: z.coerce
    .number()
    .int()
    .positive()
    .default(50)
    .describe('Most directives (`@include`, `@skip`) in one operation.'),
  GRAPHQL_PERSISTED_DOCUMENTS: z.string().min(1).optional().meta({
    description:
      "A trusted-documents manifest (graphql-codegen client preset's `persisted-documents.json` or Apollo's persisted query manifest); its documents may be sent by hash alone.",
    unset: "only the account area's own documents are trusted",
  }),
  GRAPHQL_TRUSTED_DOCUMENTS_ONLY: bool.optional().meta({
    description: '`true`: only trusted documents run, on both doors (`400 INVALID_INPUT` for any other), except for analysts and admins.',
    unset: '`false`',
  }),
  GRAPHQL_APQ_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 3600)
    .default(24 * 3600)
    .describe(
      'How long a document registered by automatic persisted queries is kept (in memory, and in Redis with `GRAPHQL_APQ_REDIS_URL`).',
    ),
  GRAPHQL_APQ_REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// URL')
    .optional()
    .meta({
      description:
        "A Redis server of its own (not `REDIS_URL`'s: eviction policies are per server) where automatic persisted queries are shared by every instance. Run it as a cache: `maxmemory` set and `maxmemory-policy allkeys-lru`. Start-up refuses the same server as `REDIS_URL`, whatever the database number.",
      unset: 'each process keeps its own, in memory (2 MiB of text)',
    }),
  GRAPHQL_APQ_REGISTRATIONS_PER_DAY: z.coerce
    .number()
    .int()
    .positive()
    .default(1000)
    .describe(
      "New automatic persisted queries one account may register per day (24 h window; only authenticated callers register, anonymous callers' documents run but are never stored). Past it: `429 RATE_LIMITED` with `Retry-After`; others' documents are never evicted for it.",
    ),
  GRAPHQL_APQ_BYTES_PER_DAY: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024)
    .describe(
      'Bytes of persisted query text one account may register per day, counted after comments and padding are stripped (each text at most 16 KiB). Past it: `429 RATE_LIMITED`.',
    ),
  FFMPEG_PATH: z.string().min(1).default('ffmpeg').describe('The ffmpeg program.'),
  FFPROBE_PATH: z.string().min(1).default('ffprobe').describe('The ffprobe program.'),
  POCKETSPHINX_PATH: z
    .string()
    .min(1)
    .default('pocketsphinx_continuous')
    .describe('The PocketSphinx recogniser (the `local` transcription provider).'),
  YTDLP_PATH: z
    .string()
    .min(1)
    .default('yt-dlp')
    .describe(
      'The yt-dlp program (the `ytdlp` parse provider); it fetches through a guarded local proxy, so it meets the same address rules.',
    ),
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
    reads: ['NODE_ENV', 'METRICS_TOKEN', 'METRICS_PORT'],
    field: 'METRICS_TOKEN',
    message:
      'required when NODE_ENV=production, unless METRICS_PORT serves /metrics on a port of its own (one the deployment does not publish)',
    broken: (e) => e.NODE_ENV === 'production' && !e.METRICS_TOKEN && e.METRICS_PORT === undefined,
  },
  {
    reads: ['METRICS_PORT', 'PORT'],
    field: 'METRICS_PORT',
    message: 'must differ from PORT (the metrics get a listener of their own)',
    broken: (e) => e.METRICS_PORT !== undefined && e.METRICS_PORT !== 0 && e.METRICS_PORT === e.PORT,
  },
  {
    reads: ['GRAPHQL_APQ_REDIS_URL', 'REDIS_URL'],
    field: 'GRAPHQL_APQ_REDIS_URL',
    message:
      'must name another Redis server than REDIS_URL: a cache that evicts (allkeys-lru) would evict the rate-limit counters, which need noeviction (a database number is not another server)',
    broken: (e) => !!e.GRAPHQL_APQ_REDIS_URL && !!e.REDIS_URL && redisServer(e.GRAPHQL_APQ_REDIS_URL) === redisServer(e.REDIS_URL),
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
    reads: ['MEDIA_MAX_BYTES', 'TEMP_MAX_BYTES'],
    field: 'TEMP_MAX_BYTES',
    message: 'must be at least MEDIA_MAX_BYTES (a download that names no length reserves MEDIA_MAX_BYTES, and could never start)',
    broken: (e) => e.MEDIA_MAX_BYTES > e.TEMP_MAX_BYTES,
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

/** A Redis URL's server (host and port), whatever its database number and credentials. */
function redisServer(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname.toLowerCase()}:${u.port || '6379'}`;
  } catch {
    return url;
  }
}

/** The name of every variable the service reads (the container files and the README are checked against it). */
export const CONFIG_VARIABLES: readonly string[] = Object.freeze(Object.keys(envSchema.shape));

/** One variable as the configuration doc shows it. */
export interface VariableDoc {
  name: string;
  description: string;
  /** What happens when it is unset, for a variable without a default. */
  unset: string | null;
  /** The default, as the variable would be written (`undefined`: none). */
  default: string | undefined;
  secret: boolean;
}

/** Every variable with what the schema says of it, in the schema's order. */
export function describeVariables(): VariableDoc[] {
  return Object.entries(envSchema.shape).map(([name, schema]) => {
    const meta = (schema.meta() ?? {}) as { description?: string; unset?: string };
    const given = schema.def.type === 'default' ? (schema.def as { defaultValue: unknown }).defaultValue : undefined;
    return {
      name,
      description: meta.description ?? '',
      unset: meta.unset ?? null,
      default: given === undefined ? undefined : Array.isArray(given) ? given.join(',') : String(given),
      secret: (SECRET_VARIABLES as readonly string[]).includes(name),
    };
  });
}

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
