import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** Where the workers find their database servers' addresses (see leaseSharedEmbedded in test-database.ts). */
export const SHARED_EMBEDDED_VARIABLE = 'MEDIAGATE_TEST_EMBEDDED_SERVERS';
/** Where global-teardown.js finds the servers (jest shares only globals between the two). */
export const SERVERS = Symbol.for('mediagate.test.embeddedServers');

/**
 * Before any test file: one embedded database server per jest worker (test/support/embedded-server.js),
 * whose addresses the workers inherit in their environment. A file then leases its worker's
 * database instead of starting PGlite itself. Started on a PostgreSQL run too: the files that test
 * both databases still ask for the embedded one. Plain JavaScript, like the server: jest loads it
 * in its own process, outside the module mapping the tests use.
 */
export default async function globalSetup(globalConfig) {
  const servers = [];
  globalThis[SERVERS] = servers;
  const ports = await Promise.all(
    Array.from({ length: Math.max(1, globalConfig.maxWorkers) }, async () => {
      const child = spawn(join(process.cwd(), 'node_modules/.bin/node'), [join(process.cwd(), 'test/support/embedded-server.js')], {
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      servers.push(child);
      const line = await new Promise((resolve, reject) => {
        createInterface({ input: child.stdout }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`the embedded database server exited (${code}) before it was ready`)));
      });
      return JSON.parse(line).port;
    }),
  );
  process.env[SHARED_EMBEDDED_VARIABLE] = ports.join(',');
}
