import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Copy, DockerfileParser, type Env, From, type Instruction as AstInstruction } from 'dockerfile-ast';
import { parse } from 'yaml';
import { SERVE_PROCESS_TUNING, serveNodeFlags } from '../../src/cli/node-flags.js';
import { CONFIG_VARIABLES, loadConfig } from '../../src/config.js';

// No Docker engine runs here, so the container files are checked by reading them: each rule below
// is a function of the file's text, run on the real file and on a broken copy that it must catch.

const root = process.cwd();
const read = (name: string) => readFileSync(join(root, name), 'utf8');
const readIfExists = (name: string) => (existsSync(join(root, name)) ? read(name) : null);
const known = new Set(CONFIG_VARIABLES);

interface Instruction {
  op: string;
  /** The arguments as written, on one line with single spaces. */
  args: string;
  /** What dockerfile-ast read of it: COPY's --from and paths, ENV's pairs. */
  parsed: AstInstruction;
}
interface Stage {
  base: string;
  name: string | null;
  steps: Instruction[];
}

/** Dockerfile instructions by stage (dockerfile-ast: comments dropped, continued lines joined). */
function stagesOf(dockerfile: string): Stage[] {
  const stages: Stage[] = [];
  for (const parsed of DockerfileParser.parse(dockerfile).getInstructions()) {
    const op = parsed.getKeyword().toUpperCase();
    const args = (parsed.getArgumentsContent() ?? '').replace(/\\\n/g, ' ').replace(/\s+/g, ' ').trim();
    if (parsed instanceof From) stages.push({ base: parsed.getImage() ?? args, name: parsed.getBuildStage(), steps: [] });
    else stages.at(-1)?.steps.push({ op, args, parsed });
  }
  return stages;
}

/** `COPY [--from=x] a b dest` → { from, sources }. */
function copyOf(step: Instruction): { from: string | null; sources: string[] } {
  const copy = step.parsed as Copy;
  const paths = copy.getArguments().map((a) => a.getValue());
  return { from: copy.getFromFlag()?.getValue() ?? null, sources: paths.slice(0, -1) };
}

/** `ENV A=1 B=2` (or the old `ENV A 1`) → names and values. */
const envPairs = (step: Instruction): [string, string][] =>
  (step.parsed as Env).getProperties().map((p) => [p.getName(), p.getValue() ?? '']);
const envNames = (step: Instruction) => envPairs(step).map(([name]) => name);

const escapeRe = (s: string) => s.replace(/[.+?^$()|[\]{}\\]/g, '\\$&');

/** Whether .dockerignore keeps `path` out of the build context (plain names and `*` globs). */
function ignored(path: string, patterns: string[]): boolean {
  let out = false;
  for (const raw of patterns) {
    const negate = raw.startsWith('!');
    const p = (negate ? raw.slice(1) : raw).replace(/^\/+|\/+$/g, '');
    const re = new RegExp(`^${p.split('*').map(escapeRe).join('[^/]*')}(/.*)?$`);
    if (re.test(path)) out = !negate;
  }
  return out;
}

const ignorePatterns = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));

const SECRET = /PEPPER|PASSWORD|SECRET|TOKEN|_KEY$/;

function dockerfileProblems(dockerfile: string, dockerignore: string): string[] {
  const problems: string[] = [];
  const stages = stagesOf(dockerfile);
  if (stages.length < 2) return ['fewer than two stages'];
  const runtime = stages.at(-1)!;
  const byName = new Map(stages.filter((s) => s.name).map((s) => [s.name!, s]));
  const steps = (op: string, stage = runtime) => stage.steps.filter((s) => s.op === op);
  const index = (op: string) => runtime.steps.findIndex((s) => s.op === op);

  if (!/^node:24-bookworm(-slim)?$/.test(runtime.base)) problems.push(`runtime base ${runtime.base} is not node:24 on Debian bookworm`);
  if (stages.some((s) => s.base !== runtime.base && !byName.has(s.base))) problems.push('stages are not on one base');

  const users = steps('USER');
  const user = users.at(-1)?.args.split(':')[0];
  if (!user || user === 'root' || user === '0') problems.push('the runtime stage runs as root');
  const start = Math.min(...['CMD', 'ENTRYPOINT'].map(index).filter((i) => i >= 0));
  if (users.length && runtime.steps.indexOf(users.at(-1)!) > start) problems.push('USER comes after CMD/ENTRYPOINT');
  const entrypoint = steps('ENTRYPOINT').at(-1)?.args;
  const expected = ['node', ...serveNodeFlags(read('package.json')), 'dist/cli/main.js'];
  if (!entrypoint || JSON.stringify(JSON.parse(entrypoint)) !== JSON.stringify(expected))
    problems.push(`ENTRYPOINT is not ${JSON.stringify(expected)} (npm start's flags)`);
  const cmd = steps('CMD').at(-1)?.args;
  if (!cmd || JSON.stringify(JSON.parse(cmd)) !== JSON.stringify(['serve'])) problems.push('CMD is not ["serve"]');
  if (!steps('HEALTHCHECK').some((s) => /\/readyz\b/.test(s.args))) problems.push('no HEALTHCHECK on /readyz');
  if (steps('STOPSIGNAL').at(-1)?.args !== 'SIGTERM') problems.push('STOPSIGNAL is not SIGTERM');
  if (!steps('EXPOSE').some((s) => s.args.split(' ').includes('4000'))) problems.push('port 4000 is not exposed');

  const install = steps('RUN').find((s) => /apt-get install/.test(s.args))?.args ?? '';
  for (const pkg of ['ffmpeg', 'yt-dlp', 'pocketsphinx', 'pocketsphinx-en-us', 'ca-certificates']) {
    if (!new RegExp(`(^|\\s)${escapeRe(pkg)}(\\s|$)`).test(install)) problems.push(`the runtime does not install ${pkg}`);
  }
  if (!/--no-install-recommends/.test(install)) problems.push('apt-get installs recommended packages');
  if (!/rm -rf \/var\/lib\/apt\/lists/.test(install)) problems.push('apt lists are left in the image');

  // What the running server reads from disk: the compiled code (migrations and the account area
  // inside it), package.json ("type": "module"), and production dependencies only.
  const copies = steps('COPY').map(copyOf);
  const fromStage = (dir: string) => copies.find((c) => c.sources.some((s) => s.replace(/\/$/, '').endsWith(dir)))?.from ?? null;
  if (!fromStage('/app/dist')) problems.push('the runtime does not copy dist/ from a build stage');
  const modules = fromStage('/app/node_modules');
  const modulesStage = modules ? byName.get(modules) : undefined;
  const prodOnly = modulesStage?.steps.some((s) => s.op === 'RUN' && /npm (ci|install|prune)\b.*--omit=dev/.test(s.args));
  if (!prodOnly) problems.push('node_modules in the runtime are not production-only');
  for (const file of ['package.json', 'schema', 'bin']) {
    if (!copies.some((c) => c.from === null && c.sources.includes(file))) problems.push(`the runtime does not copy ${file}`);
  }
  if (steps('RUN').some((s) => /npm (ci|install)\b/.test(s.args))) problems.push('the runtime installs packages with npm');

  // No secrets: nothing copied wholesale or from .env, no secret-looking ENV or ARG.
  const patterns = ignorePatterns(dockerignore);
  for (const stage of stages) {
    for (const c of steps('COPY', stage).concat(steps('ADD', stage)).map(copyOf)) {
      if (c.from) continue;
      for (const src of c.sources) {
        if (src === '.' || src === './') problems.push('a stage copies the whole build context');
        else if (/(^|\/)\.env/.test(src)) problems.push(`a stage copies ${src}`);
        else if (ignored(src, patterns)) problems.push(`${src} is copied but .dockerignore leaves it out`);
        else if (!existsSync(join(root, src))) problems.push(`${src} is copied but does not exist`);
      }
    }
    for (const s of [...steps('ENV', stage), ...steps('ARG', stage)]) {
      for (const name of envNames(s)) if (SECRET.test(name)) problems.push(`${name} is baked into the image`);
    }
  }
  // Besides configuration, the image sets what sizes the process's memory for a server (the README's Run in production).
  for (const s of steps('ENV'))
    for (const name of envNames(s))
      if (!known.has(name) && !(name in SERVE_PROCESS_TUNING)) problems.push(`ENV ${name} is not a configuration variable`);
  const runtimeEnv = Object.fromEntries(steps('ENV').flatMap(envPairs));
  for (const [name, value] of Object.entries(SERVE_PROCESS_TUNING))
    if (runtimeEnv[name] !== value) problems.push(`ENV ${name}=${value} is not set`);
  return problems;
}

function dockerignoreProblems(text: string): string[] {
  const patterns = ignorePatterns(text);
  return ['node_modules', '.git', '.env', '.env.production', 'dist', '.mediagate']
    .filter((p) => !ignored(p, patterns))
    .map((p) => `${p} is not ignored`);
}

type Service = {
  build?: string | { context?: string; dockerfile?: string };
  image?: string;
  command?: string | string[];
  environment?: Record<string, string | number | null> | string[];
  profiles?: string[];
  depends_on?: Record<string, { condition?: string }> | string[];
  healthcheck?: { disable?: boolean; test?: unknown };
  ports?: (string | number | { target?: number; published?: string | number })[];
  volumes?: (string | { type?: string; source?: string; target?: string })[];
};
type Compose = { services: Record<string, Service> };

const composeOf = (text: string) => parse(text, { merge: true }) as Compose;

function environmentOf(service: Service): Record<string, string> {
  const env = service.environment ?? {};
  const pairs = Array.isArray(env) ? env.map((e) => e.split(/=(.*)/s).slice(0, 2) as [string, string]) : Object.entries(env);
  return Object.fromEntries(pairs.map(([k, v]) => [k, v == null ? '' : String(v)]));
}

/** Compose's interpolation (`${X}`, `${X:-default}`, `${X-default}`, `${X:?message}`), with `vars` as the shell and .env. */
function interpolate(value: string, vars: Record<string, string>): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}/g,
    (whole, name: string, colon: string, kind: string, rest: string) => {
      if (whole === '$$') return '$';
      const set = name in vars && (colon ? vars[name] !== '' : true);
      if (set) return vars[name];
      if (kind === '?') throw new Error(`${name}: ${rest}`);
      return kind === '-' ? rest : '';
    },
  );
}

/** The host ports a service publishes (`"4000:80"`, `"127.0.0.1:4000:80"`, `{ published }`); a bare `"4000"` publishes none fixed. */
const hostPorts = (s: Service) =>
  (s.ports ?? []).flatMap((p) => {
    if (typeof p === 'object') return p.published === undefined ? [] : [String(p.published)];
    const parts = String(p).split('/')[0].split(':');
    return parts.length > 1 ? [parts.at(-2)!] : [];
  });
/** Where a bind mount of `target` comes from, relative to the compose file. */
const mountSource = (s: Service, target: string) =>
  (s.volumes ?? [])
    .map((v) => (typeof v === 'string' ? { source: v.split(':')[0], target: v.split(':')[1] } : v))
    .find((v) => v.target === target)?.source;

/** The load balancer in front of the gateways: published, and handing every request to the gateway service's port. */
function loadBalancerProblems(services: Record<string, Service>, files: (path: string) => string | null, docs: string): string[] {
  const problems: string[] = [];
  const gateway = services.gateway;
  if (hostPorts(gateway).length)
    problems.push(`the gateway publishes host port ${hostPorts(gateway).join(', ')}: with --scale every gateway would want it`);
  const lbs = Object.entries(services).filter(([, s]) => /^(nginx|caddy|traefik)(:|$)/.test(s.image ?? ''));
  if (lbs.length !== 1) return [...problems, `${lbs.length} load balancer services (nginx, Caddy or Traefik), not one`];
  const [name, lb] = lbs[0];
  if (lb.profiles) problems.push(`the load balancer ${name} is behind a profile`);
  if (!dependsOn(lb).gateway) problems.push(`the load balancer ${name} does not wait for the gateway`);
  const config = loadConfig({
    NODE_ENV: 'production',
    API_KEY_PEPPER: 'p'.repeat(40),
    ...Object.fromEntries(Object.entries(environmentOf(gateway)).map(([k, v]) => [k, interpolate(v, { API_KEY_PEPPER: 'p'.repeat(40) })])),
  });
  if (!config.trustProxy)
    problems.push('the gateway does not trust the load balancer (TRUST_PROXY): every client would share its address budget');
  const published = hostPorts(lb);
  if (!published.includes(new URL(config.publicUrl).port))
    problems.push(`the load balancer does not publish PUBLIC_URL's port (${new URL(config.publicUrl).port})`);
  // nginx: its conf.d/default.conf; every request passed to the gateway service's name, resolved as
  // requests come (a variable), so a killed gateway's address is one of several tries, never the only one.
  const source = mountSource(lb, '/etc/nginx/conf.d/default.conf');
  const conf = source ? files(source) : null;
  if (conf === null)
    return [...problems, `the load balancer's configuration (${source ?? 'no mount at /etc/nginx/conf.d/default.conf'}) does not exist`];
  const code = conf.replace(/#.*$/gm, '');
  const target = /proxy_pass\s+http:\/\/\$(\w+)\s*;/.exec(code);
  if (!target) problems.push('requests are not passed to the gateways by a name resolved as they come (proxy_pass http://$variable)');
  else if (!new RegExp(`set\\s+\\$${target[1]}\\s+gateway:${config.port}\\s*;`).test(code))
    problems.push(`the load balancer's target is not gateway:${config.port}`);
  if (!/^\s*resolver\s+127\.0\.0\.11\b/m.test(code)) problems.push("the load balancer does not ask Docker's DNS (resolver 127.0.0.11)");
  if (!/proxy_next_upstream\s+[^;]*\berror\b[^;]*\btimeout\b/.test(code))
    problems.push('a request that cannot reach one gateway is not tried on the next (proxy_next_upstream error timeout)');
  const listen = /listen\s+(\d+)/.exec(code)?.[1];
  if (!listen || !(lb.ports ?? []).some((p) => String(typeof p === 'object' ? p.target : String(p).split(':').at(-1)) === listen))
    problems.push(`the load balancer listens on ${listen}, which compose does not publish`);
  if (/non_idempotent/.test(code)) problems.push('the load balancer may send a POST twice (non_idempotent)');
  if (!/--scale gateway=\d+/.test(docs)) problems.push('docs/deploy.md does not show --scale gateway=N');
  return problems;
}

const commandOf = (s: Service) => (Array.isArray(s.command) ? s.command.join(' ') : (s.command ?? ''));
const dependsOn = (s: Service) =>
  (Array.isArray(s.depends_on) ? Object.fromEntries(s.depends_on.map((d) => [d, {}])) : (s.depends_on ?? {})) as Record<
    string,
    { condition?: string }
  >;

function composeProblems(text: string, docs: string, files: (path: string) => string | null = readIfExists): string[] {
  const problems: string[] = [];
  const { services } = composeOf(text);
  const ours = Object.entries(services).filter(([, s]) => s.build !== undefined);
  for (const [name, s] of ours) {
    const build = typeof s.build === 'string' ? { context: s.build } : s.build!;
    if ((build.context ?? '.') !== '.' || (build.dockerfile ?? 'Dockerfile') !== 'Dockerfile')
      problems.push(`${name} is not built from ./Dockerfile`);
  }
  const gateway = services.gateway;
  const worker = services.worker;
  if (!gateway || !worker) return [...problems, 'no gateway or no worker service'];
  if (!gateway.build) problems.push('the gateway is not built from the Dockerfile');
  if (!worker.build && worker.image !== gateway.image) problems.push('the worker does not run the gateway’s image');
  if (commandOf(gateway) !== 'serve') problems.push('the gateway does not run `serve`');
  if (commandOf(worker) !== 'worker') problems.push('the worker does not run `worker`');
  if (worker.healthcheck?.disable !== true) problems.push('the worker keeps the image’s HTTP health check');
  for (const dep of ['postgres', 'redis'])
    if (dependsOn(gateway)[dep]?.condition !== 'service_healthy') problems.push(`the gateway does not wait for a healthy ${dep}`);
  for (const profile of ['cobalt', 'whisper'])
    if (!services[profile]?.profiles?.includes(profile)) problems.push(`no ${profile} service behind the ${profile} profile`);
  if (!environmentOf(services.cobalt ?? {}).API_URL) problems.push('cobalt has no API_URL');

  // The variables: known to the schema and documented in docs/configuration.md; values the configuration accepts.
  const table = docs.split(/^# Configuration$/m)[1] ?? '';
  const documented = new Set(
    [...table.matchAll(/^\|([^|]*)\|/gm)].flatMap((m) => [...m[1].matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((n) => n[1])),
  );
  for (const [name, s] of [
    ['gateway', gateway],
    ['worker', worker],
  ] as const) {
    for (const key of Object.keys(environmentOf(s))) {
      if (!known.has(key)) problems.push(`${name} sets ${key}, which the configuration does not know`);
      if (!documented.has(key)) problems.push(`${name} sets ${key}, which docs/configuration.md does not list`);
    }
  }
  const pepper = { API_KEY_PEPPER: 'p'.repeat(40) };
  const withProfiles = { ...pepper, PARSE_PROVIDERS: 'cobalt,builtin,ytdlp', TRANSCRIBE_PROVIDERS: 'openai,local' };
  for (const [label, vars] of [
    ['defaults', pepper],
    ['the profiles', withProfiles],
  ] as const) {
    for (const [name, s] of [
      ['gateway', gateway],
      ['worker', worker],
    ] as const) {
      try {
        const env = Object.fromEntries(Object.entries(environmentOf(s)).map(([k, v]) => [k, interpolate(v, vars)]));
        const config = loadConfig({ NODE_ENV: 'production', ...env });
        if (name === 'gateway' && config.workerConcurrency !== 0) problems.push('the gateway works the queue beside the worker');
        if (name === 'worker' && config.workerConcurrency < 1) problems.push('the worker works nothing');
        if (name === 'gateway' && !config.redisUrl?.includes('//redis:'))
          problems.push('the gateway does not share rate limits through the redis service');
        if (!config.databaseUrl?.includes('@postgres:')) problems.push(`${name} does not use the postgres service`);
        if (label === 'the profiles') {
          if (new URL(config.cobalt.apiUrl ?? 'http://none').hostname !== 'cobalt')
            problems.push(`${name} does not reach the cobalt service`);
          if (new URL(config.openai.baseUrl).hostname !== 'whisper' || config.transcribeProviders?.[0] !== 'openai')
            problems.push(`${name} does not transcribe with the whisper service first`);
          const preload = environmentOf(services.whisper ?? {}).PRELOAD_MODELS ?? '[]';
          if (!(JSON.parse(interpolate(preload, vars)) as string[]).includes(config.openai.model))
            problems.push('the whisper service does not load the model the gateway asks for');
        }
      } catch (err) {
        problems.push(`${name} with ${label}: ${(err as Error).message}`);
      }
    }
  }
  try {
    interpolate(environmentOf(gateway).API_KEY_PEPPER ?? '', {});
    problems.push('API_KEY_PEPPER is not required');
  } catch {
    // `${API_KEY_PEPPER:?...}`: compose refuses to start without it.
  }
  try {
    problems.push(...loadBalancerProblems(services, files, docs));
  } catch (err) {
    problems.push(`load balancer: ${(err as Error).message}`);
  }
  // The documented commands name profiles that exist.
  for (const m of docs.matchAll(/--profile (\S+)/g))
    if (!Object.values(services).some((s) => s.profiles?.includes(m[1])))
      problems.push(`docs/deploy.md names a profile ${m[1]} that compose lacks`);
  return problems;
}

describe('container files', () => {
  const dockerfile = read('Dockerfile');
  const dockerignore = read('.dockerignore');
  const compose = read('docker-compose.yml');
  // What an operator reads beside the compose file: how to run it, and every variable.
  const docs = `${read('docs/deploy.md')}\n${read('docs/configuration.md')}`;

  it('the Dockerfile builds in stages and runs the built server as a non-root user, with the media tools and no secrets', () => {
    expect(dockerfileProblems(dockerfile, dockerignore)).toEqual([]);
  });

  it('.dockerignore keeps dependencies, builds, history and secrets out of the context', () => {
    expect(dockerignoreProblems(dockerignore)).toEqual([]);
  });

  it('compose: gateways behind an nginx load balancer and a worker, from the Dockerfile; PostgreSQL, Redis, cobalt and Whisper behind profiles; every variable known and documented', () => {
    expect(composeProblems(compose, docs)).toEqual([]);
  });

  // Each rule, shown to catch the mistake it is for.
  const swap = (text: string, from: string | RegExp, to: string) => {
    // Every occurrence of a string (comments mention some of them too).
    const out = typeof from === 'string' ? text.split(from).join(to) : text.replace(from, to);
    if (out === text) throw new Error(`the broken copy did not change: ${from}`);
    return out;
  };

  it.each([
    [
      'one stage',
      (d: string) => `FROM node:24-bookworm-slim${d.split(/^FROM node:24-bookworm-slim AS runtime$/m)[1]}`,
      'fewer than two stages',
    ],
    ['root user', (d: string) => swap(d, /^USER node$/m, 'USER root'), 'runs as root'],
    ['no user', (d: string) => swap(d, /^USER node$/m, ''), 'runs as root'],
    ['USER after start', (d: string) => `${swap(d, /^USER node$/m, '')}\nUSER node\n`, 'USER comes after'],
    ['runs the sources', (d: string) => swap(d, '"dist/cli/main.js"', '"bin/mediagate.js"'), 'ENTRYPOINT'],
    ['default heap', (d: string) => swap(d, '"--heap-growing-percent=30", ', ''), 'ENTRYPOINT'],
    ['no serve', (d: string) => swap(d, 'CMD ["serve"]', 'CMD ["worker"]'), 'CMD'],
    ['health on /healthz', (d: string) => swap(d, '/readyz', '/healthz'), '/readyz'],
    ['no stop signal', (d: string) => swap(d, /^STOPSIGNAL SIGTERM$/m, 'STOPSIGNAL SIGKILL'), 'STOPSIGNAL'],
    ['no yt-dlp', (d: string) => swap(d, ' yt-dlp ', ' '), 'yt-dlp'],
    ['no English model', (d: string) => swap(d, ' pocketsphinx-en-us', ''), 'pocketsphinx-en-us'],
    ['recommends', (d: string) => swap(d, ' --no-install-recommends', ''), 'recommended'],
    ['apt lists kept', (d: string) => swap(d, /\s*&& rm -rf \/var\/lib\/apt\/lists\/\*/, ''), 'apt lists'],
    ['dev dependencies', (d: string) => swap(d, 'npm ci --omit=dev', 'npm ci'), 'production-only'],
    ['no package.json', (d: string) => swap(d, /^COPY package.json \.\/$/m, ''), 'package.json'],
    ['copies everything', (d: string) => swap(d, 'COPY src ./src', 'COPY . .'), 'whole build context'],
    ['copies .env', (d: string) => swap(d, 'COPY schema ./schema', 'COPY schema .env ./'), '.env'],
    ['copies an ignored folder', (d: string) => swap(d, 'COPY schema ./schema', 'COPY schema docs ./'), 'docs is copied but .dockerignore'],
    [
      'bakes a pepper',
      (d: string) => swap(d, 'ENV NODE_ENV=production', 'ENV API_KEY_PEPPER=x NODE_ENV=production'),
      'API_KEY_PEPPER is baked',
    ],
    ['unknown ENV', (d: string) => swap(d, 'ENV NODE_ENV=production', 'ENV NODE_ENVIRONMENT=production'), 'NODE_ENVIRONMENT'],
    ['another malloc', (d: string) => swap(d, 'MALLOC_ARENA_MAX=2', 'MALLOC_ARENA_MAX=8'), 'ENV MALLOC_ARENA_MAX=2 is not set'],
  ])('the Dockerfile check catches: %s', (_label, breakIt, problem) => {
    expect(dockerfileProblems(breakIt(dockerfile), dockerignore).join('\n')).toContain(problem);
  });

  it.each(['node_modules', '.git', '.env'])('the .dockerignore check catches a missing %s', (entry) => {
    const broken = dockerignore
      .split('\n')
      .filter((l) => l.trim() !== entry && !(entry === '.env' && l.startsWith('.env')))
      .join('\n');
    expect(dockerignoreProblems(broken).join('\n')).toContain(`${entry} is not ignored`);
  });

  it.each([
    [
      'unknown variable',
      (c: string) => swap(c, 'LOG_LEVEL: ${LOG_LEVEL:-info}', 'LOG_LEVEL: ${LOG_LEVEL:-info}\n  LOGLEVEL: info'),
      'LOGLEVEL, which the configuration does not know',
    ],
    [
      'invalid value',
      (c: string) => swap(c, '${PARSE_PROVIDERS:-builtin,ytdlp}', '${PARSE_PROVIDERS:-builtin,youtube}'),
      'PARSE_PROVIDERS',
    ],
    ['another Dockerfile', (c: string) => swap(c, 'dockerfile: Dockerfile', 'dockerfile: Dockerfile.dev'), 'not built from ./Dockerfile'],
    ['worker serves', (c: string) => swap(c, 'command: worker', 'command: serve'), 'worker does not run `worker`'],
    ['gateway works the queue', (c: string) => swap(c, 'WORKER_CONCURRENCY: "0"', 'WORKER_CONCURRENCY: "2"'), 'gateway works the queue'],
    ['no redis', (c: string) => swap(c, /^\s+REDIS_URL: .*$/m, ''), 'rate limits through the redis service'],
    ['no cobalt profile', (c: string) => swap(c, 'profiles: [cobalt]', 'profiles: [extras]'), 'cobalt profile'],
    ['no whisper profile', (c: string) => swap(c, 'profiles: [whisper]', 'profiles: [extras]'), 'whisper profile'],
    ['whisper elsewhere', (c: string) => swap(c, 'http://whisper:8000/v1', 'https://api.openai.com/v1'), 'whisper service first'],
    [
      'another model',
      (c: string) =>
        swap(
          c,
          'PRELOAD_MODELS: \'["${OPENAI_TRANSCRIBE_MODEL:-Systran/faster-whisper-small}"]\'',
          'PRELOAD_MODELS: \'["Systran/faster-whisper-tiny"]\'',
        ),
      'model the gateway asks for',
    ],
    [
      'pepper optional',
      (c: string) => swap(c, /API_KEY_PEPPER: \$\{API_KEY_PEPPER:\?[^}]*\}/, 'API_KEY_PEPPER: ${API_KEY_PEPPER:-}'),
      'API_KEY_PEPPER',
    ],
    [
      'a gateway on a fixed host port',
      (c: string) => swap(c, 'expose:\n      - "4000"', 'ports:\n      - "4000:4000"'),
      'the gateway publishes host port 4000',
    ],
    ['no load balancer', (c: string) => swap(c, 'image: nginx:1.28', 'image: mediagate-lb'), '0 load balancer services'],
    ['the load balancer on another port', (c: string) => swap(c, '"4000:80"', '"8080:80"'), "does not publish PUBLIC_URL's port (4000)"],
    [
      'the load balancer not waiting',
      (c: string) => swap(c, /(\n {2}lb:[\s\S]*?)\n {4}depends_on:\n {6}gateway:\n {8}condition: service_healthy\n/, '$1\n'),
      'does not wait for the gateway',
    ],
    ['no trusted proxy', (c: string) => swap(c, /^\s+TRUST_PROXY: "1"$/m, ''), 'TRUST_PROXY'],
  ])('the compose check catches: %s', (_label, breakIt, problem) => {
    expect(composeProblems(breakIt(compose), docs).join('\n')).toContain(problem);
  });

  const nginx = read('deploy/compose/nginx.conf');
  it.each([
    ['another port', (n: string) => swap(n, 'set $gateways gateway:4000;', 'set $gateways gateway:4001;'), 'target is not gateway:4000'],
    [
      'an upstream resolved at start',
      (n: string) => swap(n, 'proxy_pass http://$gateways;', 'proxy_pass http://gateway:4000;'),
      'by a name resolved as they come',
    ],
    ['no retry', (n: string) => swap(n, 'proxy_next_upstream error timeout;', 'proxy_next_upstream off;'), 'not tried on the next'],
    ['no resolver', (n: string) => swap(n, /^resolver .*$/m, ''), "Docker's DNS"],
    ['another listener', (n: string) => swap(n, 'listen 80;', 'listen 8080;'), 'listens on 8080'],
    [
      'POST retried',
      (n: string) => swap(n, 'proxy_next_upstream error timeout;', 'proxy_next_upstream error timeout non_idempotent;'),
      'non_idempotent',
    ],
  ])('the load balancer check catches nginx with %s', (_label, breakIt, problem) => {
    const files = (path: string) => (path === './deploy/compose/nginx.conf' ? breakIt(nginx) : null);
    expect(composeProblems(compose, docs, files).join('\n')).toContain(problem);
  });

  it('the load balancer check catches a configuration that is not there', () => {
    expect(composeProblems(compose, docs, () => null).join('\n')).toContain(
      "load balancer's configuration (./deploy/compose/nginx.conf) does not exist",
    );
  });

  it('the compose check catches a variable the configuration doc lacks', () => {
    const brokenDocs = swap(docs, /^\| `REDIS_URL` .*$/m, '');
    expect(composeProblems(compose, brokenDocs).join('\n')).toContain('REDIS_URL, which docs/configuration.md does not list');
  });
});
