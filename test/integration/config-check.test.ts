import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { startRedis } from '../support/redis-server.js';

// These tests start whole processes (the CLI, a gateway), each opening its own database: seconds of
// CPU apiece, while another jest worker shares the two cores.
jest.setTimeout(120_000);

const NODE = join(process.cwd(), 'node_modules/.bin/node');
const CLI = join(process.cwd(), 'dist/cli/main.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI as an operator runs it, with only the variables given (and PATH): nothing leaks in from the test's own environment. */
function mediagate(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(NODE, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const listen = <T extends Server | TcpServer>(server: T) =>
  new Promise<T>((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
const portOf = (server: Server | TcpServer) => (server.address() as AddressInfo).port;
const close = (server: Server | TcpServer) => new Promise<void>((resolve) => server.close(() => resolve()));

/** A port nobody listens on: opened, then closed. */
async function closedPort(): Promise<number> {
  const server = await listen(createTcpServer());
  const port = portOf(server);
  await close(server);
  return port;
}

/** A Redis stand-in speaking RESP: PING answers PONG, any other command OK. */
function fakeRedis(): TcpServer {
  return createTcpServer((socket) => {
    let buffer = '';
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      // Each command is an array of bulk strings: *N\r\n($len\r\nword\r\n)×N.
      for (;;) {
        const m = /^\*(\d+)\r\n/.exec(buffer);
        if (!m) return;
        let at = m[0].length;
        const words: string[] = [];
        for (let i = 0; i < Number(m[1]); i += 1) {
          const len = /^\$(\d+)\r\n/.exec(buffer.slice(at));
          if (!len || buffer.length < at + len[0].length + Number(len[1]) + 2) return;
          at += len[0].length;
          words.push(buffer.slice(at, at + Number(len[1])));
          at += Number(len[1]) + 2;
        }
        buffer = buffer.slice(at);
        socket.write(words[0]?.toUpperCase() === 'PING' ? '+PONG\r\n' : '+OK\r\n');
      }
    });
  });
}

describe('mediagate config check', () => {
  let dir: string;
  let upstream: Server;
  let redis: TcpServer;
  let upstreamUrl: string;
  let base: Record<string, string>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mediagate-config-check-'));
    // Engines that answer their version flag like the real ones; the real ones need not be installed.
    for (const name of ['ffmpeg', 'ffprobe'])
      writeFileSync(join(dir, name), `#!/bin/sh\necho "${name} version 9.9-test"\n`, { mode: 0o755 });
    // An OpenAI-compatible server and an OIDC issuer in one: any HTTP answer proves a provider reachable.
    upstream = await listen(
      createServer((req, res) => {
        if (req.url === '/.well-known/openid-configuration')
          return void res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ issuer: upstreamUrl, jwks_uri: `${upstreamUrl}/jwks` }));
        if (req.url === '/jwks')
          return void res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'AAAA', kid: 'k1' }] }));
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"message":"no key"}}');
      }),
    );
    upstreamUrl = `http://127.0.0.1:${portOf(upstream)}`;
    redis = await listen(fakeRedis());
    base = {
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      MEDIAGATE_DATA_DIR: join(dir, 'data'),
      API_KEY_PEPPER: 'config-check-pepper-0123456789abcdef',
      FFMPEG_PATH: join(dir, 'ffmpeg'),
      FFPROBE_PATH: join(dir, 'ffprobe'),
      // CI's PostgreSQL when there is one (only `select 1` is run), else the embedded database's directory.
      ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
    };
  });
  afterAll(async () => {
    await close(upstream);
    await close(redis);
    rmSync(dir, { recursive: true, force: true });
  });

  it('exits 0 when the configuration is valid and every engine and service answers', async () => {
    const env = {
      ...base,
      TRANSCRIBE_PROVIDERS: 'openai',
      OPENAI_BASE_URL: `${upstreamUrl}/v1`,
      REDIS_URL: `redis://127.0.0.1:${portOf(redis)}`,
      OIDC_ISSUER: upstreamUrl,
      OIDC_AUDIENCE: 'mediagate',
    };
    const json = await mediagate(['--json', 'config', 'check'], env);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report).toMatchObject({ ok: true, problems: [] });
    expect(report.checks.map((c: { name: string }) => c.name).sort()).toEqual([
      'database',
      'ffmpeg',
      'ffprobe',
      'metrics',
      'oidc',
      'openai',
      'redis',
      'temp disk',
    ]);
    for (const check of report.checks) expect(check).toEqual({ name: expect.any(String), ok: true, detail: expect.any(String) });
    expect(report.checks.find((c: { name: string }) => c.name === 'openai').detail).toContain('HTTP 401');
    expect(report.checks.find((c: { name: string }) => c.name === 'ffmpeg').detail).toContain('ffmpeg version 9.9-test');
    expect(report.checks.find((c: { name: string }) => c.name === 'oidc').detail).toContain('1 signing key');
    expect(report.config).toMatchObject({
      PORT: 4000,
      TRANSCRIBE_PROVIDERS: ['openai'],
      OPENAI_BASE_URL: `${upstreamUrl}/v1`,
      REDIS_URL: env.REDIS_URL,
      COBALT_API_URL: null,
    });

    const human = await mediagate(['config', 'check'], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^ok +redis: .*answered PONG; its eviction policy could not be read: .*noeviction$/m);
    expect(human.stdout).toMatch(/^ok +database: /m);
    expect(human.stdout).toContain('  PORT=4000\n');
    expect(human.stdout.trim().split('\n').at(-1)).toBe('all well');
  });

  it('warns, without failing, when the downloads transcriptions may run at once need more than the temporary volume has free', async () => {
    const tmp = join(dir, 'tmp');
    mkdirSync(tmp, { recursive: true });
    const roomy = { ...base, TMPDIR: tmp, MEDIA_MAX_BYTES: String(64 * 1024 * 1024), TEMP_MAX_DOWNLOADS: '2' };
    const fine = JSON.parse((await mediagate(['--json', 'config', 'check'], roomy)).stdout);
    expect(fine.checks.find((c: { name: string }) => c.name === 'temp disk')).toEqual({
      name: 'temp disk',
      ok: true,
      detail: expect.stringMatching(new RegExp(`GiB free in ${tmp}; transcriptions may use 0\\.13 GiB`)),
    });

    // A petabyte a download, ten at once: no disk here has that free (fs.statfs reads what it has).
    const greedy = { ...base, TMPDIR: tmp, MEDIA_MAX_BYTES: String(2 ** 50), TEMP_MAX_BYTES: String(2 ** 52), TEMP_MAX_DOWNLOADS: '10' };
    const json = await mediagate(['--json', 'config', 'check'], greedy);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report.ok).toBe(true);
    expect(report.checks.find((c: { name: string }) => c.name === 'temp disk')).toEqual({
      name: 'temp disk',
      ok: true,
      warning: true,
      detail: expect.stringContaining('more than is free; lower TEMP_MAX_BYTES or MEDIA_MAX_BYTES × TEMP_MAX_DOWNLOADS'),
    });
    const human = await mediagate(['config', 'check'], greedy);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^warning +temp disk: .* free in .*: more than is free/m);
    expect(human.stdout.trim().split('\n').at(-1)).toBe('all well');
  });

  it('reaches the embedded database through the server that owns it', async () => {
    const env = { ...base, DATABASE_URL: '', MEDIAGATE_DATA_DIR: join(dir, 'served') };
    const server = spawn(NODE, [CLI, 'serve'], {
      env: { PATH: process.env.PATH ?? '', ...env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => server.once('exit', resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        let out = '';
        server.stdout!.on('data', (d) => {
          out += d;
          if (out.includes('mediagate is listening')) resolve();
        });
        server.once('exit', () => reject(new Error(`serve exited:\n${out}`)));
      });
      const run = await mediagate(['--json', 'config', 'check'], env);
      const database = JSON.parse(run.stdout).checks.find((c: { name: string }) => c.name === 'database');
      expect(database).toMatchObject({
        ok: true,
        detail: expect.stringMatching(/^embedded, through the server running on .* answered select 1$/),
      });
      expect(run.code).toBe(0);
    } finally {
      server.kill('SIGTERM');
      await exited;
    }
  });

  it('says where /metrics is served, and refuses it open on the service port in production (serve too)', async () => {
    const production = { ...base, NODE_ENV: 'production' };
    const open = JSON.parse((await mediagate(['--json', 'config', 'check'], production)).stdout);
    expect(open.problems).toEqual([
      {
        field: 'METRICS_TOKEN',
        message:
          'required when NODE_ENV=production, unless METRICS_PORT serves /metrics on a port of its own (one the deployment does not publish)',
      },
    ]);
    const serve = await mediagate(['serve'], { ...production, HOST: '127.0.0.1', PORT: '0' });
    expect(serve.code).not.toBe(0);
    expect(serve.stderr).toContain('  - METRICS_TOKEN: required when NODE_ENV=production');
    const metricsOf = async (env: Record<string, string>) =>
      JSON.parse((await mediagate(['--json', 'config', 'check'], env)).stdout).checks.find((c: { name: string }) => c.name === 'metrics');
    expect(await metricsOf({ ...production, METRICS_PORT: '9464' })).toEqual({
      name: 'metrics',
      ok: true,
      detail: 'on 0.0.0.0:9464 only, a listener of its own (PORT answers 404): publish PORT alone',
    });
    expect(await metricsOf(base)).toEqual({
      name: 'metrics',
      ok: true,
      detail: 'on PORT 4000, open to anyone who reaches it (production needs METRICS_TOKEN or METRICS_PORT)',
    });
  });

  it('checks each Redis’s eviction policy: the counters’ must be noeviction, the persisted queries’ a bounded allkeys cache, on another server', async () => {
    const [counters, cache] = await Promise.all([
      startRedis(['--maxmemory', '8mb', '--maxmemory-policy', 'volatile-lru']),
      startRedis(['--maxmemory', '8mb', '--maxmemory-policy', 'allkeys-lru']),
    ]);
    try {
      const report = JSON.parse(
        (await mediagate(['--json', 'config', 'check'], { ...base, REDIS_URL: counters.url, GRAPHQL_APQ_REDIS_URL: cache.url })).stdout,
      );
      expect(report.checks.filter((c: { name: string }) => c.name.startsWith('redis'))).toEqual([
        {
          name: 'redis',
          ok: false,
          detail: `${counters.url} answered PONG, but maxmemory-policy volatile-lru, maxmemory 8388608: it holds the rate-limit counters and quotas, which must never be evicted: set maxmemory-policy noeviction`,
        },
        {
          name: 'redis (persisted queries)',
          ok: true,
          detail: `${cache.url} answered PONG; maxmemory-policy allkeys-lru, maxmemory 8388608`,
        },
      ]);
      // One server for both, whatever the database number: refused.
      const shared = JSON.parse(
        (await mediagate(['--json', 'config', 'check'], { ...base, REDIS_URL: `${cache.url}/0`, GRAPHQL_APQ_REDIS_URL: `${cache.url}/1` }))
          .stdout,
      );
      expect(shared.problems).toEqual([
        { field: 'GRAPHQL_APQ_REDIS_URL', message: expect.stringMatching(/^must name another Redis server than REDIS_URL/) },
      ]);
    } finally {
      await Promise.all([counters.stop(), cache.stop()]);
    }
  });

  it('lists every problem at once, per variable and between variables, and serve refuses the same ones', async () => {
    const env = {
      ...base,
      API_KEY_PEPPER: '',
      NODE_ENV: 'production',
      PORT: 'eighty',
      METRICS_TOKEN: 'short',
      PARSE_PROVIDERS: 'builtin,cobalt',
      OIDC_ISSUER: 'https://id.example.com',
      TRANSCRIBE_PROVIDERS: 'deepgram,whisper',
      TRUST_PROXY: '10.0.0.0/8,the-load-balancer',
    };
    const expected = ['API_KEY_PEPPER', 'COBALT_API_URL', 'METRICS_TOKEN', 'OIDC_AUDIENCE', 'PORT', 'TRANSCRIBE_PROVIDERS', 'TRUST_PROXY'];
    const json = await mediagate(['--json', 'config', 'check'], env);
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout);
    expect(report.ok).toBe(false);
    expect(report.problems.map((p: { field: string }) => p.field.split('.')[0]).sort()).toEqual(expected);
    expect(report.problems).toContainEqual({ field: 'API_KEY_PEPPER', message: 'required when NODE_ENV=production' });
    expect(report.problems).toContainEqual({ field: 'COBALT_API_URL', message: 'required when PARSE_PROVIDERS includes cobalt' });
    expect(report.problems).toContainEqual({
      field: 'TRUST_PROXY.1',
      message: 'must be an IP address or CIDR range (or loopback, linklocal, uniquelocal); the list is separated by commas',
    });
    // Nothing is checked against a configuration that serve would refuse.
    expect(report.checks).toEqual([]);
    // An invalid variable shows what was given; the rules that read it wait (no DEEPGRAM_API_KEY problem).
    expect(report.config).toMatchObject({ PORT: 'eighty', TRANSCRIBE_PROVIDERS: 'deepgram,whisper', NODE_ENV: 'production' });

    const human = await mediagate(['config', 'check'], env);
    expect(human.code).toBe(1);
    for (const field of expected) expect(human.stdout).toMatch(new RegExp(`^problem  ${field}[.:]`, 'm'));
    expect(human.stdout).toContain('checks: not run until the configuration is valid');

    const serve = await mediagate(['serve'], env);
    expect(serve.code).not.toBe(0);
    for (const field of expected) expect(serve.stderr).toContain(`  - ${field}`);
  });

  it('reports an unreachable provider, a reachable one and a missing engine, and exits 1', async () => {
    const refused = await closedPort();
    const env = {
      ...base,
      PARSE_PROVIDERS: 'builtin,cobalt,ytdlp',
      COBALT_API_URL: `http://127.0.0.1:${refused}/`,
      YTDLP_PATH: join(dir, 'no-such-yt-dlp'),
      TRANSCRIBE_PROVIDERS: 'openai',
      OPENAI_BASE_URL: `${upstreamUrl}/v1`,
    };
    const json = await mediagate(['--json', 'config', 'check'], env);
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout);
    const byName = Object.fromEntries(report.checks.map((c: { name: string }) => [c.name, c]));
    expect(byName.cobalt).toEqual({ name: 'cobalt', ok: false, detail: `http://127.0.0.1:${refused}/: connection refused` });
    expect(byName.openai).toMatchObject({ ok: true, detail: `${upstreamUrl}/v1 answered HTTP 401` });
    expect(byName['yt-dlp']).toMatchObject({ ok: false, detail: expect.stringContaining('not found') });
    expect(byName.ffmpeg.ok).toBe(true);
    expect(report.problems).toEqual([
      { check: 'yt-dlp', message: byName['yt-dlp'].detail },
      { check: 'cobalt', message: byName.cobalt.detail },
    ]);

    const human = await mediagate(['config', 'check'], env);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/^problem {2}cobalt: .*connection refused$/m);
    expect(human.stdout).toMatch(/^problem {2}yt-dlp: not found/m);
    expect(human.stdout).toMatch(/^ok {7}openai: /m);
    expect(human.stdout.trim().split('\n').at(-1)).toBe('2 problems');
  });

  it('never prints a secret, in text or JSON, whether the configuration is valid or not', async () => {
    const secrets = {
      API_KEY_PEPPER: 'pepper-SECRET-0123456789abcdefghijklmnop',
      OPENAI_API_KEY: 'sk-SECRET-openai-key',
      DEEPGRAM_API_KEY: 'dg-SECRET-deepgram-key',
      ASSEMBLYAI_API_KEY: 'aai-SECRET-assemblyai-key',
      COBALT_API_KEY: 'cobalt-SECRET-key',
      METRICS_TOKEN: 'metrics-SECRET-token-0123',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer otel-SECRET-token',
    };
    const refused = await closedPort();
    const valid = {
      ...base,
      ...secrets,
      DATABASE_URL: `postgresql://mediagate:db-SECRET-password@127.0.0.1:${refused}/mediagate`,
      REDIS_URL: `redis://:redis-SECRET-password@127.0.0.1:${refused}`,
      OPENAI_BASE_URL: `${upstreamUrl}/v1?api-key=query-SECRET-value`,
      PARSE_PROVIDERS: 'builtin,cobalt',
      COBALT_API_URL: `http://cobalt-user:cobalt-SECRET-password@127.0.0.1:${refused}/`,
      TRANSCRIBE_PROVIDERS: 'openai,deepgram,assemblyai',
      DEEPGRAM_BASE_URL: upstreamUrl,
      ASSEMBLYAI_BASE_URL: upstreamUrl,
    };
    // Invalid on purpose: a secret that is too short, a URL that does not parse.
    const invalid = { ...valid, METRICS_TOKEN: 'tok-SECRET', REDIS_URL: 'redis//:redis-SECRET-password@nowhere', PORT: 'x' };
    for (const env of [valid, invalid]) {
      for (const args of [
        ['config', 'check'],
        ['--json', 'config', 'check'],
      ]) {
        const run = await mediagate(args, env);
        expect(run.code).toBe(1);
        const printed = run.stdout + run.stderr;
        expect(printed).not.toMatch(/SECRET/);
        expect(printed).toMatch(/API_KEY_PEPPER"?[=:]"?\*\*\*\*/);
      }
    }
    const report = JSON.parse((await mediagate(['--json', 'config', 'check'], valid)).stdout);
    expect(report.config).toMatchObject({
      OPENAI_API_KEY: '****',
      DATABASE_URL: `postgresql://mediagate:****@127.0.0.1:${refused}/mediagate`,
      OPENAI_BASE_URL: `${upstreamUrl}/v1?api-key=****`,
      OTEL_EXPORTER_OTLP_HEADERS: '****',
    });
    // The failures are still explained.
    expect(report.problems).toContainEqual({ check: 'database', message: expect.stringContaining('connection refused') });
    expect(report.problems).toContainEqual({ check: 'redis', message: expect.stringContaining('connection refused') });
  });
});
