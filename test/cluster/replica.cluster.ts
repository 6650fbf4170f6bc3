import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { prepareConfig } from '../../src/local-config.js';
import { openOrm, createServices, type Services } from '../../src/root.js';
import { GatewayProcess } from '../model/gateway-process.js';
import { TEST_PEPPER } from '../support/harness.js';
import { gql } from './cluster-world.js';
import { send } from '../support/send.js';
import { PostgresPair } from './postgres-pair.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { Connection, ErrorBody } from '../support/bodies.js';

type History = { creditHistory: Connection<{ reason: string }> };
type Me = { me: { credits: { available: number; held: number } } };

const run = promisify(execFile);

/** Ledger rows the export streams: a million, so serving it from one server or the other shows in its counters. */
const ROWS = 1_000_000;
const DB = 'mediagate';

describe('analysts off the primary (DATABASE_READ_URL on a real streaming replica)', () => {
  let pg: PostgresPair;
  let gateway: GatewayProcess;
  let operator: Services;
  let closeOperator: () => Promise<void>;
  let analyst: { accountId: string; key: string };
  let env: Record<string, string>;

  beforeAll(async () => {
    pg = await PostgresPair.start();
    await pg.primary.query('postgres', `create database ${DB}`);
    await pg.primary.query(DB, 'create extension pg_stat_statements');
    env = {
      NODE_ENV: 'test',
      API_KEY_PEPPER: TEST_PEPPER,
      DATABASE_URL: pg.primary.url(DB),
      DATABASE_READ_URL: pg.replica.url(DB),
      WORKER_CONCURRENCY: '0',
      RATE_LIMIT_PER_MINUTE: '1000000',
      RATE_LIMIT_IP_PER_MINUTE: '1000000',
    };
    gateway = await GatewayProcess.start(env);
    const orm = await openOrm(pg.primary.url(DB), 2);
    operator = createServices(prepareConfig(loadConfig({ ...env, LOG_LEVEL: 'silent' })), orm, pino({ level: 'silent' }));
    closeOperator = async () => {
      await operator.close();
      await orm.close(true);
    };
    const acc = await operator.accounts.create(OPERATOR, { name: 'Analyst', credits: 1, membershipDays: 30, roles: ['analyst'] });
    analyst = { accountId: acc.id, key: (await operator.apiKeys.create(OPERATOR, acc.id, 'analyst')).key };
    // A long history: one grant per row, the balance kept equal to the entries' sum.
    await pg.primary.query(
      DB,
      `with e as (insert into credit_entry (account_id, kind, amount, available_delta, held_delta, reason, created_at)
                  select $1, 'GRANT', 1, 1, 0, 'bulk', now() - make_interval(secs => g) from generate_series(1, $2) g returning 1)
       update credit_balance set available = available + (select count(*) from e) where account_id = $1`,
      [analyst.accountId, ROWS],
    );
    await pg.caughtUp();
  }, 300_000);
  afterAll(async () => {
    await gateway?.stop();
    await closeOperator?.();
    await pg?.stop();
  }, 60_000);

  /** Rows returned by statements reading credit_entry on one server, from pg_stat_statements. */
  const historyRows = async (server: 'primary' | 'replica') =>
    Number(
      (
        await pg[server].query(
          DB,
          `select coalesce(sum(rows), 0)::bigint as n from pg_stat_statements where query ilike '%from credit_entry%' and query ilike 'select%'`,
        )
      )[0].n,
    );

  it('serves the CSV export from the replica: the primary does not read the history for it', async () => {
    const [primaryBefore, replicaBefore] = [await historyRows('primary'), await historyRows('replica')];
    const res = await fetch(`${gateway.url}/api/credit-history.csv`, { headers: { authorization: `Bearer ${analyst.key}` } });
    expect(res.status).toBe(200);
    // Counted as it streams (a million lines are not kept): the header, the opening grant, and the bulk.
    let lines = 0;
    let tail = '';
    const decoder = new TextDecoder();
    for await (const chunk of res.body!) {
      const text = decoder.decode(chunk, { stream: true });
      for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lines++;
      tail = (tail + text).slice(-1000);
    }
    expect(lines).toBe(ROWS + 2);
    // Newest first: the last line is the oldest of the bulk.
    expect(tail.trimEnd().split('\n').at(-1)).toMatch(/,GRANT,1,1,0,,,bulk$/);
    const [primaryAfter, replicaAfter] = [await historyRows('primary'), await historyRows('replica')];
    process.stdout.write(
      `[cluster replica] export of ${ROWS + 1} entries: the replica returned ${replicaAfter - replicaBefore} history rows, the primary ${primaryAfter - primaryBefore}\n`,
    );
    expect(replicaAfter - replicaBefore).toBeGreaterThanOrEqual(ROWS + 1);
    expect(primaryAfter - primaryBefore).toBe(0);
  }, 300_000);

  it('config check reaches the replica and says it is one', async () => {
    const { stdout } = await run(
      join(process.cwd(), 'node_modules/.bin/node'),
      [join(process.cwd(), 'dist/cli/main.js'), '--json', 'config', 'check'],
      {
        env: { PATH: process.env.PATH ?? '', ...env, LOG_LEVEL: 'silent' },
      },
    );
    const report = JSON.parse(stdout);
    const replica = report.checks.find((c: { name: string }) => c.name === 'database replica');
    expect(replica).toEqual({ name: 'database replica', ok: true, detail: expect.stringContaining('(a replica, in recovery)') });
    expect(report.checks.find((c: { name: string }) => c.name === 'database').detail).not.toContain('replica');
  }, 60_000);

  it('a lagging replica shows history as of its replay point, never an old balance; a replica that is down answers those reads 503 while the primary serves the rest', async () => {
    await pg.replica.query(DB, 'select pg_wal_replay_pause()');
    await operator.ledger.grant(analyst.accountId, 7, 'while the replica lags');
    const expected = ROWS + 1 + 7;
    // The history lags (its newest entry is still the opening grant; the bulk is dated before it)...
    const history = await gql<History>(gateway.url, analyst.key, `{ creditHistory(first: 1) { edges { node { reason } } } }`);
    expect('lost' in history ? history : history.json.data.creditHistory.edges[0].node.reason).toBe('initial credits');
    // ...the balance never does: the caller's own and an account list's come from the primary.
    const me = await gql<Me>(gateway.url, analyst.key, `{ me { credits { available held } } }`);
    expect('lost' in me ? me : me.json.data.me.credits).toEqual({ available: expected, held: 0 });
    const list = await gql<{ accounts: Connection<{ id: string; credits: { available: number } }> }>(
      gateway.url,
      analyst.key,
      `{ accounts(first: 10) { edges { node { id credits { available } } } } }`,
    );
    const row = 'lost' in list ? list : list.json.data.accounts.edges.find((e) => e.node.id === analyst.accountId)?.node;
    expect(row).toEqual({ id: analyst.accountId, credits: { available: expected } });
    await pg.replica.query(DB, 'select pg_wal_replay_resume()');
    await pg.caughtUp();
    const caughtUp = await gql<History>(gateway.url, analyst.key, `{ creditHistory(first: 1) { edges { node { reason } } } }`);
    expect('lost' in caughtUp ? caughtUp : caughtUp.json.data.creditHistory.edges[0].node.reason).toBe('while the replica lags');

    // Down: the analysts' reads are refused with the contract's 503, the rest is served by the primary.
    await pg.replica.stop('immediate');
    const csv = await send<ErrorBody>(gateway.url, 'GET', '/api/credit-history.csv', { authorization: `Bearer ${analyst.key}` });
    expect('lost' in csv ? csv : [csv.status, csv.json.error.code]).toEqual([503, 'PROVIDER_UNAVAILABLE']);
    const historyDown = await gql<History>(gateway.url, analyst.key, `{ creditHistory(first: 1) { edges { node { reason } } } }`);
    expect('lost' in historyDown ? historyDown : historyDown.json.errors?.[0].extensions.code).toBe('PROVIDER_UNAVAILABLE');
    const meDown = await gql<Me>(gateway.url, analyst.key, `{ me { credits { available held } } }`);
    expect('lost' in meDown ? meDown : meDown.json.data.me.credits).toEqual({ available: expected, held: 0 });
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
  }, 120_000);
});
