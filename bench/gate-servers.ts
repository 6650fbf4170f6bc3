import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * The password gates bench/gate-compare.ts puts side by side, each in its own process in front of
 * an in-memory PGlite: ours (src/db/embedded-auth.ts, started as `mediagate serve` starts it) and
 * pg-gateway's, built the way its README shows, installed at run time into a scratch directory
 * (never into the product's dependencies).
 */
export type GateKind = 'mediagate' | 'pg-gateway-0.2.4' | 'pg-gateway-0.3.0-beta.4';

export interface RunningGate {
  kind: GateKind;
  child: ChildProcess;
  host: string;
  port: number;
  password: string;
  /** The SASL/MD5 authentication requests this gate makes (what a refused client may see). */
  requests: readonly number[];
  /** What the gate wrote to stderr so far (pg-gateway logs every exception it catches). */
  stderrBytes(): number;
  exited(): boolean;
}

/** pg-gateway 0.2.4 (the registry's `latest`) has no SCRAM: md5 is its strongest password method, as in its README's PGlite example. */
const GATEWAY_024 = `
import net from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import { PostgresConnection, hashMd5Password } from 'pg-gateway';

const db = await PGlite.create();
const password = process.env.GATE_PASSWORD;
const server = net.createServer((socket) => {
  const connection = new PostgresConnection(socket, {
    serverVersion: '16.3 (PGlite)',
    authMode: 'md5Password',
    async validateCredentials(credentials) {
      if (credentials.authMode !== 'md5Password') return false;
      const expected = await hashMd5Password(credentials.user, password, credentials.salt);
      return credentials.hash === expected;
    },
    async onStartup() {
      await db.waitReady;
      return false;
    },
    async onMessage(data, { isAuthenticated }) {
      if (!isAuthenticated) return false;
      connection.sendData(await db.execProtocolRaw(data));
      return true;
    },
  });
  socket.on('error', () => {});
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port, password })));
`;

/** pg-gateway 0.3.0-beta.4: SCRAM-SHA-256 as its README shows, the SCRAM data derived once (the README derives it per connection). */
const GATEWAY_030 = `
import net from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import { createScramSha256Data } from 'pg-gateway';
import { fromNodeSocket } from 'pg-gateway/node';

const db = await PGlite.create();
const password = process.env.GATE_PASSWORD;
const scram = await createScramSha256Data(password);
const server = net.createServer(async (socket) => {
  socket.on('error', () => {});
  await fromNodeSocket(socket, {
    serverVersion: '16.3 (PGlite)',
    auth: { method: 'scram-sha-256', getScramSha256Data: () => scram },
    async onStartup() {
      await db.waitReady;
    },
    async onMessage(data, { isAuthenticated }) {
      if (!isAuthenticated) return;
      return await db.execProtocolRaw(data);
    },
  });
});
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port, password })));
`;

const SOURCES: Record<Exclude<GateKind, 'mediagate'>, { version: string; source: string; requests: number[] }> = {
  'pg-gateway-0.2.4': { version: '0.2.4', source: GATEWAY_024, requests: [5] },
  'pg-gateway-0.3.0-beta.4': { version: '0.3.0-beta.4', source: GATEWAY_030, requests: [10, 11] },
};

/** Installs pg-gateway and the product's PGlite into `dir/<kind>` (once) and writes the gate there. */
function prepare(kind: Exclude<GateKind, 'mediagate'>, scratch: string): string {
  const { version, source } = SOURCES[kind];
  const dir = join(scratch, kind);
  mkdirSync(dir, { recursive: true });
  const pglite = (JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> }).dependencies[
    '@electric-sql/pglite'
  ];
  if (!existsSync(join(dir, 'package.json')))
    writeFileSync(join(dir, 'package.json'), '{"name":"gate-scratch","private":true,"type":"module"}');
  const installed = join(dir, 'node_modules/pg-gateway/package.json');
  if (!existsSync(installed) || (JSON.parse(readFileSync(installed, 'utf8')) as { version: string }).version !== version) {
    execFileSync('npm', ['install', '--no-audit', '--no-fund', `pg-gateway@${version}`, `@electric-sql/pglite@${pglite}`], {
      cwd: dir,
      stdio: 'inherit',
    });
  }
  writeFileSync(join(dir, 'gate.mjs'), source);
  return join(dir, 'gate.mjs');
}

/** Starts one gate in its own process and waits for the address it prints. */
export async function startGate(kind: GateKind, scratch: string, self: string): Promise<RunningGate> {
  const password = `gate-compare-${Math.random().toString(36).slice(2)}`;
  const node = process.execPath;
  const child =
    kind === 'mediagate'
      ? spawn(node, [self, '--serve-ours'], { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(node, [prepare(kind, scratch)], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, GATE_PASSWORD: password } });
  let stderr = 0;
  let gone = false;
  child.stderr!.on('data', (d: Buffer) => (stderr += d.length));
  child.once('exit', () => (gone = true));
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${kind} exited (${code}) before it listened`)));
  });
  const ready = JSON.parse(first) as { port: number; password: string };
  return {
    kind,
    child,
    host: '127.0.0.1',
    port: ready.port,
    password: ready.password,
    requests: kind === 'mediagate' ? [10, 11] : SOURCES[kind].requests,
    stderrBytes: () => stderr,
    exited: () => gone,
  };
}

/** The process's resident memory now and at its peak, in MiB (Linux /proc). */
export function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: Math.round(kib('VmRSS') / 1024), peak: Math.round(kib('VmHWM') / 1024) };
}
