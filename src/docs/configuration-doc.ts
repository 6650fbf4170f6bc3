import { describeVariables, type VariableDoc } from '../config.js';

/** The configuration doc's sections, each with its variables in the order a reader meets them. */
const SECTIONS: readonly { title: string; variables: readonly string[] }[] = [
  {
    title: 'Server',
    variables: ['NODE_ENV', 'HOST', 'PORT', 'PUBLIC_URL', 'LOG_LEVEL', 'API_KEY_PEPPER', 'SHUTDOWN_GRACE_SECONDS', 'TRUST_PROXY'],
  },
  {
    title: 'Database',
    variables: [
      'DATABASE_URL',
      'DATABASE_READ_URL',
      'MEDIAGATE_DATA_DIR',
      'DATABASE_POOL_SIZE',
      'LEDGER_BATCH_WINDOW_MS',
      'API_KEY_CACHE_SECONDS',
      'REDIS_URL',
    ],
  },
  {
    title: 'Parse',
    variables: [
      'PARSE_PROVIDERS',
      'COBALT_API_URL',
      'COBALT_API_KEY',
      'YTDLP_PATH',
      'PARSE_TIMEOUT_SECONDS',
      'PAGE_MAX_BYTES',
      'MANIFEST_MAX_BYTES',
      'PARSE_MAX_ITEMS',
      'PROBE_MAX_BYTES',
      'PROBE_TIMEOUT_SECONDS',
      'PROBE_MAX_CANDIDATES',
      'PROBE_MAX_PART_BYTES',
      'PROBE_MEMORY_BYTES',
      'PROBE_CONCURRENCY',
      'PROBE_MAX_PER_ACCOUNT',
      'PROBE_FFPROBE_CONCURRENCY',
    ],
  },
  {
    title: 'Streams',
    variables: ['STREAM_TTL_SECONDS', 'STREAM_MAX_SECONDS', 'STREAM_MAX_BYTES', 'STREAM_MAX_PER_ACCOUNT', 'STREAM_FFMPEG_CONCURRENCY'],
  },
  {
    title: 'Transcription',
    variables: [
      'TRANSCRIBE_PROVIDERS',
      'OPENAI_BASE_URL',
      'OPENAI_API_KEY',
      'OPENAI_TRANSCRIBE_MODEL',
      'OPENAI_MAX_UPLOAD_BYTES',
      'OPENAI_PIECE_SECONDS',
      'OPENAI_CONCURRENCY',
      'DEEPGRAM_API_KEY',
      'DEEPGRAM_BASE_URL',
      'DEEPGRAM_MODEL',
      'ASSEMBLYAI_API_KEY',
      'ASSEMBLYAI_BASE_URL',
      'ASSEMBLYAI_POLL_SECONDS',
      'TRANSCRIBE_TIMEOUT_SECONDS',
      'MEDIA_MAX_BYTES',
      'TEMP_MAX_BYTES',
      'TEMP_MAX_DOWNLOADS',
      'TRANSCRIBE_MAX_PER_ACCOUNT',
      'WORKER_CONCURRENCY',
      'SWEEP_INTERVAL_SECONDS',
      'WEBHOOK_TIMEOUT_SECONDS',
      'WEBHOOK_RETRY_DELAY_SECONDS',
    ],
  },
  {
    title: 'Prices, limits and reach',
    variables: [
      'PRICE_PARSE_CREDITS',
      'PRICE_TRANSCRIBE_CREDITS_PER_MINUTE',
      'RATE_LIMIT_PER_MINUTE',
      'RATE_LIMIT_IP_PER_MINUTE',
      'RATE_LIMIT_ACCOUNT_PER_MINUTE',
      'API_KEYS_PER_ACCOUNT',
      'SUBSCRIPTIONS_PER_ACCOUNT',
      'FETCH_ALLOW_HOSTS',
    ],
  },
  {
    title: 'GraphQL',
    variables: [
      'GRAPHQL_INTROSPECTION',
      'GRAPHQL_MAX_DEPTH',
      'GRAPHQL_MAX_ALIASES',
      'GRAPHQL_MAX_TOKENS',
      'GRAPHQL_MAX_COST',
      'GRAPHQL_MAX_DIRECTIVES',
      'GRAPHQL_PERSISTED_DOCUMENTS',
      'GRAPHQL_TRUSTED_DOCUMENTS_ONLY',
      'GRAPHQL_APQ_TTL_SECONDS',
      'GRAPHQL_APQ_REDIS_URL',
      'GRAPHQL_APQ_REGISTRATIONS_PER_DAY',
      'GRAPHQL_APQ_BYTES_PER_DAY',
    ],
  },
  {
    title: 'Sign-in for the account area',
    variables: ['OIDC_ISSUER', 'OIDC_AUDIENCE', 'OIDC_JWKS_URL', 'OIDC_CLIENT_ID', 'LOGIN_LINK_MINUTES', 'SESSION_HOURS'],
  },
  {
    title: 'Metrics and traces',
    variables: [
      'METRICS_TOKEN',
      'METRICS_PORT',
      'METRICS_HOST',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'OTEL_SERVICE_NAME',
      'OTEL_EXPORTER_OTLP_HEADERS',
    ],
  },
  { title: 'Media tools', variables: ['FFMPEG_PATH', 'FFPROBE_PATH', 'POCKETSPHINX_PATH'] },
];

const MIB = 1024 * 1024;

/** A default as an operator reads it: sizes in bytes also in MiB or GiB. */
function defaultCell(v: VariableDoc): string {
  if (v.default === undefined) return v.unset ? `unset: ${v.unset}` : 'unset';
  if (v.default === '') return 'empty';
  const n = Number(v.default);
  if (v.name.endsWith('_BYTES') && Number.isInteger(n) && n >= MIB) {
    const human = n >= 1024 * MIB ? `${n / (1024 * MIB)} GiB` : `${n / MIB} MiB`;
    return `\`${v.default}\` (${human})`;
  }
  return `\`${v.default}\``;
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/**
 * docs/configuration.md: every variable the service reads, by section, with its default and what it
 * does, from the configuration's own schema (src/config.ts), so the doc cannot drift from the code.
 * A variable in no section is an error: the doc must place every one.
 */
export function renderConfigurationDoc(): string {
  const variables = new Map(describeVariables().map((v) => [v.name, v]));
  const placed = new Set(SECTIONS.flatMap((s) => s.variables));
  const unplaced = [...variables.keys()].filter((name) => !placed.has(name));
  if (unplaced.length) throw new Error(`add ${unplaced.join(', ')} to a section in src/docs/configuration-doc.ts`);
  const unknown = [...placed].filter((name) => !variables.has(name));
  if (unknown.length) throw new Error(`src/docs/configuration-doc.ts names ${unknown.join(', ')}, which the configuration does not read`);
  const out = [
    '# Configuration',
    '',
    '<!-- Generated from src/config.ts by `npm run schema:write`; do not edit by hand. -->',
    '',
    'Every setting is an environment variable. A bad configuration stops start-up with every problem',
    'listed at once, and `mediagate config check` reads it as `serve` would (see [cli.md](cli.md)).',
    'Secrets have no defaults and are printed masked.',
  ];
  for (const section of SECTIONS) {
    out.push('', `## ${section.title}`, '', '| variable | default | what it does |', '|:--|:--|:--|');
    for (const name of section.variables) {
      const v = variables.get(name)!;
      if (!v.description) throw new Error(`${name} has no description in src/config.ts`);
      out.push(`| \`${name}\`${v.secret ? ' (secret)' : ''} | ${cell(defaultCell(v))} | ${cell(v.description)} |`);
    }
  }
  return `${out.join('\n')}\n`;
}
