import { createTestDatabase } from '../support/test-database.js';

describe('migrations', () => {
  it('create every table with the ledger constraints', async () => {
    const db = await createTestDatabase();
    try {
      const em = db.orm.em.fork();
      const rows = await em.execute<{ table_name: string }[]>(
        `select table_name from information_schema.tables where table_schema = 'public' order by table_name`,
      );
      expect(rows.map((r) => r.table_name)).toEqual(
        expect.arrayContaining(['account', 'api_key', 'credit_balance', 'credit_entry', 'job', 'membership']),
      );
      await em.execute(`insert into account (id, name) values ('00000000-0000-0000-0000-000000000001', 'a')`);
      await expect(
        em.execute(`insert into credit_balance (account_id, available) values ('00000000-0000-0000-0000-000000000001', -1)`),
      ).rejects.toThrow(/credit_balance_non_negative/);
    } finally {
      await db.close();
    }
  });
});
