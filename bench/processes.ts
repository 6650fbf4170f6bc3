import { fork, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVE_PROCESS_TUNING, serveNodeFlags } from '../src/cli/node-flags.js';

/** A process the bench started: its pid (for its memory) and how to end it. */
export interface BenchProcess {
  pid: number;
  /** Where it answers HTTP. */
  url: string;
  /** SIGTERM, then SIGKILL after a grace period; resolves with the exit code. */
  stop(): Promise<number | null>;
}

// The bench runs from dist-bench/bench/ (bench/tsconfig.json); the gateway it measures is the
// product's own build in dist/ (`npm run build`), started with npm start's flags from package.json.
const GATEWAY_MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const GATEWAY_FLAGS = serveNodeFlags(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));

const started = new Set<ChildProcess>();
// Whatever way the bench ends, it leaves none of its servers behind.
process.on('exit', () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** Starts one of the bench's own servers (page, proxy, reference) and waits for the port it reports. */
export async function forkServer(module: string, env: NodeJS.ProcessEnv, nodeFlags: string[] = []): Promise<BenchProcess> {
  const child = fork(fileURLToPath(new URL(module, import.meta.url)), [], {
    env,
    execArgv: nodeFlags,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  started.add(child);
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`${module} exited (${code}) before it listened`)));
  });
  return { pid: child.pid!, url: `http://127.0.0.1:${port}`, stop: () => stop(child) };
}

/** The runtime tuning a gateway started with `env` runs with, as the bench's header says it: `MALLOC_ARENA_MAX=2`. */
export const tuningOf = (env: NodeJS.ProcessEnv): string =>
  Object.entries(SERVE_PROCESS_TUNING)
    .map(([name, value]) => `${name}=${env[name] ?? value}`)
    .join(' ');

/**
 * Starts `mediagate serve` from the product's dist/ as `npm start` does (its Node flags included) with the
 * runtime tuning the image sets (SERVE_PROCESS_TUNING; the caller's environment may override it), its
 * output in `logFile`, and waits until /readyz answers. `nodeFlags` go to Node too (--cpu-prof, --import).
 */
export async function startGateway(env: NodeJS.ProcessEnv, logFile: string, nodeFlags: string[] = []): Promise<BenchProcess> {
  const port = await freePort();
  const log = openSync(logFile, 'a');
  const child = spawn(process.execPath, [...GATEWAY_FLAGS, ...nodeFlags, GATEWAY_MAIN, 'serve'], {
    env: { ...SERVE_PROCESS_TUNING, ...env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  started.add(child);
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`the gateway exited (${child.exitCode}) while starting:\n${readFileSync(logFile, 'utf8').slice(-3000)}`);
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > until) throw new Error(`the gateway did not become ready in 120 s; see ${logFile}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return { pid: child.pid!, url, stop: () => stop(child) };
}

function stop(child: ChildProcess, graceMs = 30_000): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      started.delete(child);
      resolve(code);
    });
    child.kill('SIGTERM');
  });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** The pepper of the bench's gateways and of the accounts it seeds for them. */
export const BENCH_PEPPER = 'bench-pepper-0123456789abcdef0123456789';

/**
 * A bench gateway's environment: production settings on the bench's database (the embedded one
 * without `databaseUrl`), fetching only from the page server, with rate limits out of the way (the
 * bench measures the pipeline, not the limiter's refusals, and needs no Redis).
 */
export function gatewayEnvironment(opts: {
  work: string;
  pageUrl: string;
  databaseUrl?: string;
  extra?: NodeJS.ProcessEnv;
}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'production',
    API_KEY_PEPPER: BENCH_PEPPER,
    // Production serves no open /metrics: the bench reads none.
    METRICS_TOKEN: 'bench-metrics-token-0123456789',
    MEDIAGATE_DATA_DIR: join(opts.work, 'data'),
    DATABASE_URL: opts.databaseUrl,
    FETCH_ALLOW_HOSTS: opts.pageUrl.replace('http://', ''),
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '1000000000',
    RATE_LIMIT_IP_PER_MINUTE: '1000000000',
    RATE_LIMIT_ACCOUNT_PER_MINUTE: '1000000000',
    ...opts.extra,
  };
  if (!opts.databaseUrl) delete env.DATABASE_URL;
  return env;
}
