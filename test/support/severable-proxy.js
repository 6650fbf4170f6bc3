import { createConnection, createServer } from 'node:net';

/**
 * A TCP relay in front of a database server, so a test can cut every client connection at once,
 * both ends, the way a server that kills its backends does. For the embedded database, whose
 * in-process socket server offers no way to drop its clients; PostgreSQL has pg_terminate_backend.
 * Plain JavaScript (typed in severable-proxy.d.ts): the workers' database servers
 * (embedded-server.js, run by node) put one in front of each lease, and tests use it through jest.
 */
export async function startSeverableProxy(target) {
  const pairs = new Set();
  const server = createServer((client) => {
    const upstream = createConnection(target);
    const pair = [client, upstream];
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
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  return {
    host: '127.0.0.1',
    port,
    /** Cuts every open connection; returns how many there were. */
    sever() {
      const n = pairs.size;
      for (const [client, upstream] of [...pairs]) {
        client.resetAndDestroy();
        upstream.destroy();
      }
      return n;
    },
    close: () =>
      new Promise((r) => {
        for (const [client, upstream] of pairs) {
          client.destroy();
          upstream.destroy();
        }
        server.close(() => r());
      }),
  };
}
