import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate, MIGRATIONS, type Database } from '../../src/db/database.js';
import { openOrm } from '../../src/root.js';
import { startEmbedded } from '../../src/db/embedded.js';
import { notificationsOf, type NotificationSource } from '../../src/db/notifications.js';
import { cachedPath } from './fixture-cache.js';
import { SHARED_EMBEDDED_VARIABLE } from './global-setup.js';
import { templateKey, writeMigratedTemplate } from './migrated-template.js';
import { startSeverableProxy } from './severable-proxy.js';

/** The databases a test can ask for: the one DATABASE_URL names (else embedded), or always embedded. */
export type TestDatabaseKind = 'default' | 'embedded';

/** The databases a test that matters on both runs against: PostgreSQL (when DATABASE_URL names one) and the embedded one. */
export const TEST_DATABASES: TestDatabaseKind[] = process.env.DATABASE_URL ? ['default', 'embedded'] : ['embedded'];

/** A test database whose client connections a test can kill, as a database restart or an operator would. */
export interface TestDatabase extends Database {
  /**
   * Ends every client connection of this database: pg_terminate_backend on PostgreSQL (this
   * database's backends only); on the embedded one, a cut of every connection through its relay
   * (created with `severable`). Returns how many were ended.
   */
  severConnections(): Promise<number>;
}

/**
 * A fresh, migrated database for one test file: a new database on the PostgreSQL named by
 * DATABASE_URL (dropped afterwards), or an in-memory PGlite when it is unset or asked for.
 */
export async function createTestDatabase(kind: TestDatabaseKind = 'default', options: { severable?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = kind === 'embedded' ? undefined : process.env.DATABASE_URL;
  if (!adminUrl) {
    // This worker's database server when it is free, else one in this process.
    const embedded =
      (await leaseSharedEmbedded()) ?? (await startEmbedded(null, { loadDataDir: new Blob([readFileSync(await migratedTemplatePath())]) }));
    // The embedded socket server cannot drop its clients: a relay in front of it can.
    const direct = new URL(embedded.clientUrl);
    const relay = options.severable ? await startSeverableProxy({ host: direct.hostname, port: Number(direct.port) }) : null;
    if (relay) direct.port = String(relay.port);
    const orm = await openOrm(direct.toString(), 1);
    // Already migrated in the template; run as in production (it finds nothing left to do).
    await migrate(orm);
    const notifications = notificationsOf({ embedded });
    return {
      orm,
      embedded: true,
      clientUrl: direct.toString(),
      notifications,
      async close() {
        await notifications.close();
        await orm.close(true);
        await relay?.close();
        await embedded.stop();
      },
      async severConnections() {
        if (!relay) throw new Error('ask createTestDatabase for a severable embedded database');
        return relay.sever();
      },
    };
  }
  const name = `mediagate_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const orm = await openOrm(url.toString(), 10);
  await migrate(orm);
  const notifications = notificationsOf({ clientUrl: url.toString() });
  return {
    orm,
    embedded: false,
    clientUrl: url.toString(),
    notifications,
    async close() {
      await notifications.close();
      await orm.close(true);
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
    async severConnections() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        const { rows } = await c.query(
          `select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()`,
          [name],
        );
        return rows[0].n as number;
      } finally {
        await c.end();
      }
    },
  };
}

/**
 * The migrated template (see migrated-template.js), made once per set of migrations and kept in the
 * temporary directory for later runs; parallel workers wait for the one that makes it (see cachedPath).
 */
function migratedTemplatePath(): Promise<string> {
  return cachedPath(join(tmpdir(), `mediagate-test-pglite-${templateKey(MIGRATIONS)}.tar`), (partial) =>
    writeMigratedTemplate(partial, { startEmbedded, openOrm, migrate }),
  );
}

/**
 * This jest worker's embedded database server, emptied to the migrated template for this file, or
 * null when there is none (a run without global-setup.js) or it is leased already (a second
 * database in the same file). Its notifications come down the lease's connection; stopping it
 * ends the lease, which cuts every connection made through its address.
 */
async function leaseSharedEmbedded(): Promise<(NotificationSource & { clientUrl: string; stop(): Promise<void> }) | null> {
  const ports = process.env[SHARED_EMBEDDED_VARIABLE]?.split(',').map(Number);
  if (!ports?.length) return null;
  const port = ports[(Number(process.env.JEST_WORKER_ID ?? 1) - 1) % ports.length];
  const socket = connect(port, '127.0.0.1');
  const lines = createInterface({ input: socket });
  const handlers = new Set<(channel: string, payload: string) => void>();
  const first = new Promise<{ clientUrl?: string; busy?: boolean; error?: string } | null>((resolve) => {
    // Also after the answer: a server that dies mid-lease closes the socket, and must not crash the worker.
    socket.on('error', () => resolve(null));
    lines.once('close', () => resolve(null));
    lines.once('line', (line) => resolve(JSON.parse(line)));
  });
  const answer = await first;
  if (!answer?.clientUrl) {
    socket.destroy();
    if (answer?.error) throw new Error(`the worker's embedded database server failed: ${answer.error}`);
    return null;
  }
  lines.on('line', (line) => {
    const { channel, payload } = JSON.parse(line) as { channel: string; payload: string };
    handlers.forEach((handler) => handler(channel, payload));
  });
  return {
    clientUrl: answer.clientUrl,
    onNotification(handler) {
      handlers.add(handler);
      return () => void handlers.delete(handler);
    },
    // Resolved once the server has closed its side too, so the lease is free for the next file.
    stop: () => new Promise<void>((resolve) => socket.once('close', () => resolve()).end()),
  };
}
