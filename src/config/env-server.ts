import { z } from 'zod';
import { PARSE_PROVIDER_NAMES, TRANSCRIBE_PROVIDER_NAMES, seconds, list, url } from './kinds.js';

/** The process: its database, its port and logs, secrets, timeouts, workers and prices. */
export const serverVariables = {
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
};
