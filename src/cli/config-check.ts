import { execFile } from 'node:child_process';
import { constants, existsSync } from 'node:fs';
import { access, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { readConfig, SECRET_VARIABLES, type Config, type ConfigProblem } from '../config.js';
import { prepareReading } from '../local-config.js';

/** One thing `config check` looked at: an engine, the database, a provider's address. */
export interface Check {
  name: string;
  ok: boolean;
  detail: string;
  /** Set on a check that passed with a caveat the operator should read (it does not change the exit code). */
  warning?: true;
}

/** What `mediagate config check --json` prints (docs/cli.md). */
export interface ConfigCheckReport {
  ok: boolean;
  /** Every configuration problem (`field`) and every failed check (`check`). */
  problems: ({ field: string; message: string } | { check: string; message: string })[];
  /** Each variable's effective value, secrets masked; null when unset. */
  config: Record<string, unknown>;
  /** Empty when the configuration itself is invalid: nothing is checked against it. */
  checks: Check[];
}

/** Long enough for a server on another continent, short enough for an operator waiting at a prompt. */
const TIMEOUT_MS = 5000;
const MASK = '****';
const run = promisify(execFile);

/**
 * `mediagate config check`: reads the configuration as `serve` does, lists every problem, prints
 * it with secrets masked, and checks each engine and service it names. Returns the exit code.
 */
export async function configCheck(json: boolean, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  // As serve would start: the pepper kept beside the data, the offline recogniser looked for.
  const reading = prepareReading(readConfig(env));
  const checks = reading.config ? await runChecks(reading.config) : [];
  const report: ConfigCheckReport = {
    ok: reading.problems.length === 0 && checks.every((c) => c.ok),
    problems: [
      ...reading.problems.map((p: ConfigProblem) => ({ field: p.field, message: p.message })),
      ...checks.filter((c) => !c.ok).map((c) => ({ check: c.name, message: c.detail })),
    ],
    config: Object.fromEntries(Object.entries(reading.variables).map(([name, value]) => [name, maskValue(name, value ?? null)])),
    checks,
  };
  const text = json ? JSON.stringify(report) : human(report, reading.problems);
  // Masking is by variable; this second pass catches a secret echoed anywhere else (an error message).
  process.stdout.write(`${scrub(text, secretValues(env))}\n`);
  return report.ok ? 0 : 1;
}

function human(report: ConfigCheckReport, problems: ConfigProblem[]): string {
  const lines = problems.map((p) => `problem  ${p.field}: ${p.message}`);
  if (lines.length) lines.push('');
  lines.push('configuration (secrets masked):');
  for (const [name, value] of Object.entries(report.config))
    lines.push(`  ${name}=${value === null ? '(unset)' : Array.isArray(value) ? value.join(',') : String(value)}`);
  lines.push('');
  if (problems.length) lines.push('checks: not run until the configuration is valid');
  for (const c of report.checks) lines.push(`${c.ok ? (c.warning ? 'warning' : 'ok     ') : 'problem'}  ${c.name}: ${c.detail}`);
  const failed = report.problems.length;
  lines.push('', report.ok ? 'all well' : `${failed} problem${failed === 1 ? '' : 's'}`);
  return lines.join('\n');
}

/** A variable's value as printed: declared secrets hidden whole, URLs without their password and query values. */
export function maskValue(name: string, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if ((SECRET_VARIABLES as readonly string[]).includes(name)) return MASK;
  if (typeof value === 'string' && (/^[a-z][a-z0-9+.-]*:\/\//i.test(value) || /(_URL|_ENDPOINT|_ISSUER)$/.test(name)))
    return maskUrl(value);
  return value;
}

/** The URL with its password and query values masked; a URL that does not parse is masked whole. */
export function maskUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return MASK;
  }
  if (!url.password && !url.search) return text;
  if (url.password) url.password = MASK;
  // Keys stay, values go; a segment without `=` may be a token itself and goes whole.
  url.search = url.search
    .slice(1)
    .split('&')
    .map((p) => (p === '' ? p : p.includes('=') ? `${p.slice(0, p.indexOf('='))}=${MASK}` : MASK))
    .join('&');
  // URL.toString() percent-encodes the mask; keep it readable.
  return url.toString().replaceAll(encodeURIComponent(MASK), MASK);
}

/** The secret values present in the environment: declared secrets and URL passwords. */
function secretValues(env: NodeJS.ProcessEnv): string[] {
  const found: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!value) continue;
    if ((SECRET_VARIABLES as readonly string[]).includes(name)) found.push(value);
    try {
      const url = new URL(value);
      if (url.password) found.push(url.password, decodeURIComponent(url.password));
    } catch {
      // not a URL
    }
  }
  // Very short values would mask ordinary words; the schema asks secrets to be long anyway.
  return found.filter((s) => s.length >= 6);
}

function scrub(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) out = out.replaceAll(s, MASK).replaceAll(JSON.stringify(s).slice(1, -1), MASK);
  return out;
}

/** Every engine and service the configuration names, checked at once. */
async function runChecks(config: Config): Promise<Check[]> {
  const pending: Promise<Check>[] = [
    engine('ffmpeg', config.ffmpegPath, ['-version']),
    engine('ffprobe', config.ffprobePath, ['-version']),
    database(config),
    Promise.resolve(metrics(config)),
    tempDisk(config),
  ];
  if (config.parseProviders.includes('ytdlp')) pending.push(engine('yt-dlp', config.ytdlpPath, ['--version']));
  if (config.transcribeProviders.includes('local')) pending.push(engine('pocketsphinx', config.pocketsphinxPath, null));
  if (config.databaseReadUrl) pending.push(query(config.databaseReadUrl, "PostgreSQL (analysts' reads)", 'database replica'));
  if (config.redisUrl) pending.push(redis('redis', config.redisUrl, COUNTERS));
  if (config.graphql.apqRedisUrl) pending.push(redis('redis (persisted queries)', config.graphql.apqRedisUrl, CACHE));
  if (config.parseProviders.includes('cobalt') && config.cobalt.apiUrl) pending.push(reachable('cobalt', config.cobalt.apiUrl));
  const bases: Record<string, string> = {
    openai: config.openai.baseUrl,
    deepgram: config.deepgram.baseUrl,
    assemblyai: config.assemblyai.baseUrl,
  };
  for (const name of config.transcribeProviders) if (bases[name]) pending.push(reachable(name, bases[name]));
  if (config.oidc) pending.push(oidc(config.oidc.issuer, config.oidc.jwksUrl));
  if (config.telemetry) pending.push(reachable('traces', config.telemetry.endpoint));
  if (config.graphql.persistedDocuments) pending.push(trustedDocuments(config.graphql.persistedDocuments));
  return Promise.all(pending);
}

const ok = (name: string, detail: string): Check => ({ name, ok: true, detail });
const problem = (name: string, detail: string): Check => ({ name, ok: false, detail });

const GIB = 1024 ** 3;
const gib = (bytes: number) => `${(bytes / GIB).toFixed(2)} GiB`;

/**
 * The temporary directory's free space against what transcriptions may put there: as many downloads
 * of MEDIA_MAX_BYTES as may run at once, within TEMP_MAX_BYTES. More than the volume has is a warning
 * (the volume may grow, or be shared): the budget then stops nothing before the disk fills.
 */
async function tempDisk(config: Config): Promise<Check> {
  const dir = tmpdir();
  let free: number;
  try {
    const fs = await statfs(dir);
    free = fs.bavail * fs.bsize;
  } catch (err) {
    return problem('temp disk', `${dir} cannot be read: ${reason(err)}`);
  }
  const downloads = config.mediaMaxBytes * config.temp.maxDownloads;
  const wanted = Math.min(downloads, config.temp.maxBytes);
  const detail = `${gib(free)} free in ${dir}; transcriptions may use ${gib(wanted)} (TEMP_MAX_DOWNLOADS ${config.temp.maxDownloads} × MEDIA_MAX_BYTES ${gib(config.mediaMaxBytes)} = ${gib(downloads)}, within TEMP_MAX_BYTES ${gib(config.temp.maxBytes)})`;
  if (wanted <= free) return ok('temp disk', detail);
  return {
    name: 'temp disk',
    ok: true,
    warning: true,
    detail: `${detail}: more than is free; lower TEMP_MAX_BYTES or MEDIA_MAX_BYTES × TEMP_MAX_DOWNLOADS below it, or give the volume more room`,
  };
}

/** Where GET /metrics is served and who may read it (production refuses to start with it open on PORT). */
function metrics(config: Config): Check {
  const token = config.metricsToken ? ', behind METRICS_TOKEN' : '';
  if (config.metricsPort !== null)
    return ok(
      'metrics',
      `on ${config.metricsHost}:${config.metricsPort} only, a listener of its own (PORT answers 404)${token}: publish PORT alone`,
    );
  if (token) return ok('metrics', `on PORT ${config.port}${token}`);
  return ok('metrics', `on PORT ${config.port}, open to anyone who reaches it (production needs METRICS_TOKEN or METRICS_PORT)`);
}

/** The program is there and runs (its version line); without `args`, that it is there and executable. */
async function engine(name: string, command: string, args: string[] | null): Promise<Check> {
  const path = await locate(command);
  if (!path) return problem(name, `not found: ${command}`);
  if (!args) return ok(name, path);
  try {
    const { stdout } = await run(path, args, { timeout: TIMEOUT_MS });
    return ok(name, `${stdout.split('\n')[0].trim().slice(0, 100)} (${path})`);
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: string | number };
    return problem(
      name,
      e.killed ? `${path} did not answer within ${TIMEOUT_MS / 1000} s` : `${path} failed to run (${e.code ?? e.message})`,
    );
  }
}

/** An executable path: the command itself when it names a file, else the first match on PATH. */
async function locate(command: string): Promise<string | null> {
  const candidates =
    isAbsolute(command) || command.includes('/')
      ? [command]
      : (process.env.PATH ?? '')
          .split(delimiter)
          .filter(Boolean)
          .map((dir) => join(dir, command));
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  return null;
}

/** PostgreSQL answers `select 1`; the embedded one through a running server, else its data directory is writable. */
async function database(config: Config): Promise<Check> {
  if (config.databaseUrl) return query(config.databaseUrl, 'PostgreSQL');
  const { findRunningEmbedded } = await import('../db/embedded.js');
  let running: string | null;
  try {
    running = findRunningEmbedded(config.dataDir);
  } catch (err) {
    return problem('database', (err as Error).message);
  }
  if (running) return query(running, `embedded, through the server running on ${config.dataDir}`);
  let dir = config.dataDir;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  try {
    await access(dir, constants.W_OK);
    return ok('database', `embedded in ${config.dataDir} (writable; opened by the first command or server)`);
  } catch {
    return problem('database', `embedded in ${config.dataDir}, but ${dir} is not writable`);
  }
}

async function query(connectionString: string, label: string, name = 'database'): Promise<Check> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: TIMEOUT_MS, query_timeout: TIMEOUT_MS });
  client.on('error', () => {});
  try {
    await client.connect();
    const { rows } = await client.query<{ version: string; replica: boolean }>(
      `select 1, current_setting('server_version') as version, pg_is_in_recovery() as replica`,
    );
    const role = name === 'database' ? '' : rows[0].replica ? ' (a replica, in recovery)' : ' (not in recovery: a primary)';
    return ok(name, `${label} ${rows[0].version} at ${maskUrl(connectionString)} answered select 1${role}`);
  } catch (err) {
    return problem(name, `${label} at ${maskUrl(connectionString)}: ${reason(err)}`);
  } finally {
    await client.end().catch(() => {});
  }
}

/** What each Redis must be: the counters' never evicts (a counter evicted is a limit reset); the cache's is bounded and evicts any key. */
const COUNTERS = {
  fits: (policy: string) => policy === 'noeviction',
  advice: 'it holds the rate-limit counters and quotas, which must never be evicted: set maxmemory-policy noeviction',
};
const CACHE = {
  fits: (policy: string, maxmemory: number) => policy.startsWith('allkeys-') && maxmemory > 0,
  advice: 'it is a cache of persisted queries: set maxmemory and maxmemory-policy allkeys-lru',
};

/** The server's eviction policy and memory bound, or null where CONFIG is refused (managed services often do). */
async function evictionOf(client: Redis): Promise<{ policy: string; maxmemory: number } | null> {
  try {
    const [policy, maxmemory] = await Promise.all(['maxmemory-policy', 'maxmemory'].map((p) => client.config('GET', p)));
    if (!Array.isArray(policy) || !Array.isArray(maxmemory)) return null;
    return { policy: String(policy[1]), maxmemory: Number(maxmemory[1]) };
  } catch {
    return null;
  }
}

async function redis(name: string, url: string, wants: typeof COUNTERS | typeof CACHE): Promise<Check> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: TIMEOUT_MS,
    commandTimeout: TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    enableReadyCheck: false,
    retryStrategy: () => null,
  });
  // The connection's own error says why (refused, DNS); connect() only learns that it closed.
  let failure: unknown = null;
  client.on('error', (err) => {
    failure ??= err;
  });
  try {
    await client.connect();
    const answer = `${maskUrl(url)} answered ${await client.ping()}`;
    const eviction = await evictionOf(client);
    if (!eviction) return ok(name, `${answer}; its eviction policy could not be read: ${wants.advice}`);
    const found = `maxmemory-policy ${eviction.policy}, maxmemory ${eviction.maxmemory}`;
    return wants.fits(eviction.policy, eviction.maxmemory)
      ? ok(name, `${answer}; ${found}`)
      : problem(name, `${answer}, but ${found}: ${wants.advice}`);
  } catch (err) {
    return problem(name, `${maskUrl(url)}: ${reason(failure ?? err)}`);
  } finally {
    // A connection that already ended would leave ioredis's 2 s disconnect timer holding the process.
    if (client.status !== 'end') client.disconnect();
  }
}

/** GRAPHQL_PERSISTED_DOCUMENTS: a manifest `serve` would load: each id the SHA-256 of its document, each document valid against the schema. */
async function trustedDocuments(path: string): Promise<Check> {
  await import('reflect-metadata');
  const [{ buildGraphqlSchema }, { RESOLVERS }, { loadManifestFile }] = await Promise.all([
    import('../graphql/schema.js'),
    import('../graphql/resolvers.js'),
    import('../graphql/persisted-documents.js'),
  ]);
  try {
    const manifest = loadManifestFile(path, await buildGraphqlSchema([...RESOLVERS]));
    return ok('trusted documents', `${manifest.size} document(s) in ${path}`);
  } catch (err) {
    return problem('trusted documents', (err as Error).message.replace(/^GRAPHQL_PERSISTED_DOCUMENTS: /, ''));
  }
}

/** Any HTTP answer proves the address reachable; the check sends no credentials. */
async function reachable(name: string, url: string): Promise<Check> {
  try {
    const res = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) });
    await res.body?.cancel();
    return ok(name, `${maskUrl(url)} answered HTTP ${res.status}`);
  } catch (err) {
    return problem(name, `${maskUrl(url)}: ${reason(err)}`);
  }
}

/** The issuer's discovery document, and the signing keys it (or OIDC_JWKS_URL) points at. */
async function oidc(issuer: string, jwksUrl: string | null): Promise<Check> {
  const discovery = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  try {
    const doc = await getJson(discovery);
    const keysUrl = jwksUrl ?? (typeof doc.jwks_uri === 'string' ? doc.jwks_uri : null);
    if (!keysUrl) return problem('oidc', `${maskUrl(discovery)} names no jwks_uri`);
    const jwks = await getJson(keysUrl);
    if (!Array.isArray(jwks.keys)) return problem('oidc', `${maskUrl(keysUrl)} holds no keys`);
    return ok('oidc', `${maskUrl(discovery)} answered; ${jwks.keys.length} signing key(s) at ${maskUrl(keysUrl)}`);
  } catch (err) {
    return problem('oidc', reason(err));
  }
}

async function getJson(url: string): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (err) {
    throw new Error(`${maskUrl(url)}: ${reason(err)}`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`${maskUrl(url)} answered HTTP ${res.status}`);
  }
  try {
    return (await res.json()) as Record<string, unknown>;
  } catch {
    throw new Error(`${maskUrl(url)} did not answer JSON`);
  }
}

/** Why a connection failed, in an operator's words; URLs in a library's message lose their credentials. */
function reason(err: unknown): string {
  return explain(err).replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi, maskUrl);
}

function explain(err: unknown): string {
  const e = err as Error & { code?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no answer within ${TIMEOUT_MS / 1000} s`;
  const code = e.cause?.code ?? e.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found (DNS)';
  if (code === 'ETIMEDOUT') return `no answer within ${TIMEOUT_MS / 1000} s`;
  return e.cause?.message ?? e.message ?? String(err);
}
