import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { waitFor } from './wait-for.js';

/** A redis-server of a test's own, on a free port, with a client to look at it. */
export interface TestRedis {
  port: number;
  url: string;
  client: Redis;
  stop(): Promise<void>;
}

/** A port free a moment ago. */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });

/** Starts redis-server (nothing kept on disk) with these extra arguments (`--maxmemory 2mb`, ...); resolves once it answers PING. */
export async function startRedis(args: string[] = []): Promise<TestRedis> {
  const port = await freePort();
  const child = spawn(
    '/usr/bin/redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args],
    {
      stdio: 'ignore',
    },
  );
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 50 });
  client.on('error', () => undefined);
  await waitFor(async () => (await client.ping().catch(() => null)) === 'PONG', { describe: 'redis-server to answer PONG' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    client,
    async stop() {
      client.disconnect();
      child.kill('SIGKILL');
      await exited;
    },
  };
}
