import { createConnection, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay in front of a database server, so a test can cut every client connection at once,
 * both ends, the way a server that kills its backends does. For the embedded database, whose
 * in-process socket server offers no way to drop its clients; PostgreSQL has pg_terminate_backend.
 */
export async function startSeverableProxy(target: { host: string; port: number }) {
  const pairs = new Set<[Socket, Socket]>();
  const server = createServer((client) => {
    const upstream = createConnection(target);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    host: '127.0.0.1',
    port,
    /** Cuts every open connection; returns how many there were. */
    sever(): number {
      const n = pairs.size;
      for (const [client, upstream] of [...pairs]) {
        client.resetAndDestroy();
        upstream.destroy();
      }
      return n;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const [client, upstream] of pairs) {
          client.destroy();
          upstream.destroy();
        }
        server.close(() => r());
      }),
  };
}
