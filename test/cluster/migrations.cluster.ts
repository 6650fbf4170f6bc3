import pg from 'pg';
import { MIGRATIONS, MIGRATION_LOCK_KEY } from '../../src/db/database.js';
import { GatewayProcess } from '../model/gateway-process.js';
import { TEST_PEPPER } from '../support/harness.js';
import { createEmptyDatabase, until } from './cluster-world.js';

describe('two gateways started at the same moment on an empty database', () => {
  it('migrate once, one after the other (an advisory lock), and both become ready', async () => {
    const db = await createEmptyDatabase();
    const env = { NODE_ENV: 'test', API_KEY_PEPPER: TEST_PEPPER, DATABASE_URL: db.url, WORKER_CONCURRENCY: '0' };
    // The test takes the migration lock first, so that both processes reach it and wait: released, they race for real.
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    await holder.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const starting = [GatewayProcess.start(env), GatewayProcess.start(env)];
    const waiting = async () =>
      Number(
        (
          await holder.query(
            `select count(*) as n from pg_locks l join pg_database d on d.oid = l.database where l.locktype = 'advisory' and not l.granted and d.datname = current_database()`,
          )
        ).rows[0].n,
      );
    await until('both gateways wait for the migration lock', async () => (await waiting()) === 2, 60_000, 50);
    await holder.end();
    const started = await Promise.allSettled(starting);
    const gateways = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    try {
      // Without the lock one of them dies on "relation already exists" (or a duplicate migration row).
      expect(started.map((s) => (s.status === 'fulfilled' ? 'started' : String(s.reason).slice(0, 300)))).toEqual(['started', 'started']);
      for (const g of gateways) {
        const ready = await fetch(`${g.url}/readyz`);
        expect(ready.status).toBe(200);
      }
      // Each migration recorded once: run once, by whichever process took the lock first.
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      const { rows } = await c.query<{ name: string; n: string }>(
        `select name, count(*) as n from mikro_orm_migrations group by name order by name`,
      );
      await c.end();
      expect(rows.map((r) => [r.name, Number(r.n)])).toEqual(MIGRATIONS.map((m) => [m.name, 1]));
      // Exactly one of the two logged that it applied them.
      const migrated = gateways.filter((g) => g.lastLines().includes('"database migrated"'));
      expect(migrated).toHaveLength(1);
    } finally {
      await Promise.all(gateways.map((g) => g.stop()));
      await db.drop();
    }
  }, 120_000);
});
