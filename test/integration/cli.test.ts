import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createTestDatabase } from '../support/test-database.js';
import { openOrm } from '../../src/root.js';
import { jest } from '@jest/globals';

// These tests start whole processes (the CLI, a gateway), each opening its own database: seconds of
// CPU apiece, while another jest worker shares the two cores.
jest.setTimeout(120_000);

const run = promisify(execFile);
const NODE = join(process.cwd(), 'node_modules/.bin/node');
const CLI = join(process.cwd(), 'dist/cli/main.js');

/** The operator commands, run as an operator would, against a real database. */
describe('mediagate CLI', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let dataDir: string;
  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'mediagate-cli-'));
  });
  afterAll(async () => {
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  // The test database through DATABASE_URL (PostgreSQL, or the embedded one served to this test);
  // `ownDirectory` leaves DATABASE_URL unset, so the CLI opens the embedded database in its data directory.
  const env = (ownDirectory = false) => ({
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    API_KEY_PEPPER: 'cli-test-pepper-0123456789abcdef0123',
    MEDIAGATE_DATA_DIR: dataDir,
    DATABASE_URL: ownDirectory ? '' : db.clientUrl,
  });
  const cliIn = async (ownDirectory: boolean, ...args: string[]) => {
    const { stdout } = await run(NODE, [CLI, '--json', ...args], { env: env(ownDirectory) });
    return JSON.parse(stdout.trim().split('\n').at(-1)!);
  };
  const cli = (...args: string[]) => cliIn(false, ...args);

  it('creates an account, grants credits, sets membership, creates, lists and revokes keys', async () => {
    const account = await cli(
      'account',
      'create',
      '--name',
      'Ada',
      '--email',
      'ada@example.com',
      '--credits',
      '5',
      '--membership-days',
      '30',
    );
    expect(account).toMatchObject({
      id: expect.any(String),
      name: 'Ada',
      credits: { available: 5, held: 0 },
      membership: { active: true },
    });

    const granted = await cli('credits', 'grant', account.id, '7', '--reason', 'welcome');
    expect(granted).toEqual({ accountId: account.id, granted: 7, available: 12 });

    const key = await cli('key', 'create', account.id, '--name', 'laptop');
    expect(key.key).toMatch(/^mg_live_[0-9A-Za-z]{12}_[0-9A-Za-z]{38}$/);
    expect(key).toMatchObject({ id: expect.any(String), name: 'laptop', last4: key.key.slice(-4) });

    const listed = await cli('key', 'list', account.id);
    expect(listed.keys.map((k: { id: string }) => k.id)).toEqual([key.id]);
    expect(JSON.stringify(listed)).not.toContain(key.key);

    const revoked = await cli('key', 'revoke', key.id);
    expect(revoked.revokedAt).not.toBeNull();

    const canceled = await cli('membership', 'cancel', account.id);
    expect(canceled.membership).toMatchObject({ status: 'canceled', active: false });
    const renewed = await cli('membership', 'set', account.id, '--until', '2099-01-01T00:00:00Z');
    expect(renewed.membership).toMatchObject({ status: 'active', active: true, periodEnd: '2099-01-01T00:00:00.000Z' });

    // The key is stored only as a hash: the secret appears nowhere in the database.
    const orm = await openOrm(db.clientUrl, 1);
    const rows = await orm.em.getConnection().execute(`select * from api_key`);
    await orm.close(true);
    expect(JSON.stringify(rows)).not.toContain(key.key.split('_')[3]);
  });

  it('without DATABASE_URL, keeps its accounts in the embedded database of its data directory, from one command to the next', async () => {
    const account = await cliIn(true, 'account', 'create', '--name', 'Grace', '--credits', '2');
    expect(account).toMatchObject({ name: 'Grace', credits: { available: 2, held: 0 } });
    // A second process finds the account the first one wrote.
    const key = await cliIn(true, 'key', 'create', account.id, '--name', 'desk');
    expect(key).toMatchObject({ name: 'desk', key: expect.stringMatching(/^mg_live_/) });
    expect(readdirSync(join(dataDir, 'pgdata')).length).toBeGreaterThan(0);
  });

  it('fails clearly, with a JSON error and a non-zero exit, on bad input', async () => {
    await expect(
      run(NODE, [CLI, '--json', 'credits', 'grant', '00000000-0000-0000-0000-000000000000', '5'], { env: env() }),
    ).rejects.toMatchObject({
      code: 1,
      stdout: expect.stringContaining('"NOT_FOUND"'),
    });
    await expect(run(NODE, [CLI, '--json', 'account', 'create', '--name', 'x', '--credits', 'lots'], { env: env() })).rejects.toMatchObject(
      {
        code: expect.any(Number),
      },
    );
  });
});
