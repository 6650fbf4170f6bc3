import type { Env, Variable } from './env.js';

/**
 * Rules between variables. A rule runs only when every variable it reads is valid on its own, so a
 * mistake is reported once, beside every other problem, instead of after the others are fixed.
 */
export const CROSS_FIELD_RULES: { reads: Variable[]; field: Variable; message: string; broken: (e: Env) => boolean }[] = [
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
