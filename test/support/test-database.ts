import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { initOrm, migrate, type Database } from '../../src/db/database.js';
import { startEmbedded } from '../../src/db/embedded.js';

/** The databases a test can ask for: the one DATABASE_URL names (else embedded), or always embedded. */
export type TestDatabaseKind = 'default' | 'embedded';

/**
 * A fresh, migrated database for one test file: a new database on the PostgreSQL named by
 * DATABASE_URL (dropped afterwards), or an in-memory PGlite when it is unset or asked for.
 */
export async function createTestDatabase(kind: TestDatabaseKind = 'default'): Promise<Database> {
  const adminUrl = kind === 'embedded' ? undefined : process.env.DATABASE_URL;
  if (!adminUrl) {
    const embedded = await startEmbedded(null);
    const orm = await initOrm(embedded.clientUrl, 1);
    await migrate(orm);
    return {
      orm,
      embedded: true,
      clientUrl: embedded.clientUrl,
      async close() {
        await orm.close(true);
        await embedded.stop();
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
  const orm = await initOrm(url.toString(), 10);
  await migrate(orm);
  return {
    orm,
    embedded: false,
    clientUrl: url.toString(),
    async close() {
      await orm.close(true);
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}
