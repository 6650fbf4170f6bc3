import pg from 'pg';
import { nodesOf, type Connection } from '../support/bodies.js';
import { createHarness, type Harness } from '../support/harness.js';
import { factories } from '../support/factories.js';
import { countStatements, expectPagesInSameStatements } from '../support/statements.js';
import { nextMillisecond, waitFor } from '../support/wait-for.js';
import { OPERATOR } from '../../src/modules/principal.js';

describe('related rows through per-request DataLoaders', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  const window = () => ({ from: new Date(Date.now() - 86_400_000).toISOString(), to: new Date(Date.now() + 86_400_000).toISOString() });

  /** A task that succeeded and was charged `amount` (a HOLD and a CAPTURE entry), without a provider. */
  const chargedTask = (accountId: string, operation: 'PARSE' | 'TRANSCRIBE', amount: number) =>
    factories(h).job({ accountId }, { operation, charged: amount });

  /** A key whose last use is already recorded, so the minute-granular `last_used_at` write stays out of the counts. */
  const warmKey = async (accountId: string, scopes?: string[]) => {
    const { key, apiKey } = await h.services.apiKeys.create(OPERATOR, accountId, 'counted', scopes);
    expect((await h.gql('{ me { id } }', {}, key)).errors).toBeUndefined();
    await waitFor(async () => (await h.services.apiKeys.list(OPERATOR, accountId)).find((k) => k.id === apiKey.id)?.lastUsedAt, {
      describe: "the key's last_used_at to be written",
      interval: 20,
    });
    return key;
  };

  const ACCOUNTS = `query($first: Int, $from: DateTime!, $to: DateTime!) {
    accounts(first: $first) { edges { node {
      id name credits { available held } membership { plan active }
      apiKeys { id name last4 scopes }
      usage(from: $from, to: $to) { operation credits tasks }
    } } } }`;
  type AccountNode = {
    id: string;
    name: string;
    credits: { available: number; held: number };
    membership: { plan: string; active: boolean } | null;
    apiKeys: { id: string; name: string; last4: string; scopes: string[] }[];
    usage: { operation: string; credits: number; tasks: number }[];
  };

  it('pages 5 or 50 accounts with credits, membership, keys and usage in the same few statements', async () => {
    const analyst = await h.services.accounts.create(OPERATOR, { name: 'Ana Lyst', roles: ['analyst'] });
    const analystKey = await warmKey(analyst.id);
    const customers: string[] = [];
    for (let i = 0; i < 55; i++) {
      const acc = await h.services.accounts.create(OPERATOR, {
        name: `Customer ${i}`,
        credits: 10,
        membershipDays: i % 2 ? 30 : undefined,
      });
      await h.services.apiKeys.create(OPERATOR, acc.id, 'first');
      await h.services.apiKeys.create(OPERATOR, acc.id, 'second', ['read']);
      await chargedTask(acc.id, 'PARSE', 1);
      if (i % 3 === 0) await chargedTask(acc.id, 'TRANSCRIBE', 2);
      customers.push(acc.id);
    }

    const { small: five, large: fifty } = await expectPagesInSameStatements(h, {
      query: ACCOUNTS,
      key: analystKey,
      variables: window(),
      nodes: (data: { accounts: Connection<AccountNode> }) => nodesOf(data.accounts),
      sizes: [5, 50],
    });
    // The page, the keys of every account on it, their usage: 3 statements.
    expect(five.statements).toHaveLength(3);

    // What came back through the loaders belongs to the right account, in the right order.
    for (const node of fifty.nodes) {
      const i = customers.indexOf(node.id);
      expect(i).toBeGreaterThanOrEqual(0);
      expect(node.name).toBe(`Customer ${i}`);
      expect(node.credits).toEqual({ available: i % 3 === 0 ? 7 : 9, held: 0 });
      expect(node.membership?.active ?? false).toBe(i % 2 === 1);
      // Keys made in the same millisecond are ordered by id, so compare them by name.
      expect(node.apiKeys.map((k) => [k.name, k.scopes]).sort()).toEqual([
        ['first', ['parse', 'transcribe', 'read', 'keys']],
        ['second', ['read']],
      ]);
      expect(node.usage).toEqual([
        { operation: 'PARSE', credits: 1, tasks: 1 },
        ...(i % 3 === 0 ? [{ operation: 'TRANSCRIBE', credits: 2, tasks: 1 }] : []),
      ]);
    }
  });

  const HISTORY = `query($first: Int, $accountId: ID) {
    creditHistory(first: $first, accountId: $accountId) { edges { node { kind jobId job { id status account { id name } } } } } }`;
  type MeData = { me: Partial<AccountNode> & { id: string } };
  type HistoryData = {
    creditHistory: Connection<{
      kind: string;
      jobId: string | null;
      job: { id: string; status: string; account: { id: string; name: string } } | null;
    }>;
  };

  it('shows 5 or 50 ledger entries with their jobs and the jobs’ accounts in the same few statements', async () => {
    const owner = await h.services.accounts.create(OPERATOR, { name: 'Busy Owner', credits: 100 });
    const key = await warmKey(owner.id);
    const jobs: string[] = [];
    for (let i = 0; i < 26; i++) jobs.push(await chargedTask(owner.id, i % 2 ? 'PARSE' : 'TRANSCRIBE', 1));

    const { small: five, large: fifty } = await expectPagesInSameStatements(h, {
      query: HISTORY,
      key,
      nodes: (data: HistoryData) => nodesOf(data.creditHistory),
      sizes: [5, 50],
    });
    // The page, the jobs on it, their accounts: 3 statements, whatever the page's size.
    expect(five.statements).toHaveLength(3);
    for (const node of fifty.nodes) {
      expect(['HOLD', 'CAPTURE']).toContain(node.kind);
      expect(jobs).toContain(node.jobId);
      expect(node.job).toEqual({ id: node.jobId, status: 'SUCCEEDED', account: { id: owner.id, name: 'Busy Owner' } });
    }
  });

  it('reads 5 or 40 rows of the history per task with their jobs’ entries in the same few statements', async () => {
    const acc = await h.services.accounts.create(OPERATOR, { name: 'Per task', credits: 100 });
    const key = await warmKey(acc.id);
    const jobs: string[] = [];
    // A millisecond of its own each, so that newest first is the reverse of the order they were made in.
    for (let i = 0; i < 40; i++) {
      jobs.push(await chargedTask(acc.id, i % 2 ? 'PARSE' : 'TRANSCRIBE', 1 + (i % 3)));
      await nextMillisecond();
    }
    type Row = {
      id: string;
      job: { id: string; creditsCharged: number; creditEntries: { kind: string; amount: number; jobId: string }[] };
    };
    const { small: five, large: forty } = await expectPagesInSameStatements(h, {
      query: `query($first: Int) { creditHistoryByTask(first: $first) { edges { node { id job { id creditsCharged creditEntries { kind amount jobId } } } } } }`,
      key,
      nodes: (data: { creditHistoryByTask: Connection<Row> }) => nodesOf(data.creditHistoryByTask),
      sizes: [5, 40],
    });
    // The jobs, the entries of no task, the jobs' entries: 3 statements, whatever the page's size.
    expect(five.statements).toHaveLength(3);
    expect(forty.nodes.map((n) => n.id)).toEqual([...jobs].reverse());
    for (const { job } of forty.nodes) {
      expect(job.creditEntries).toEqual([
        { kind: 'HOLD', amount: job.creditsCharged, jobId: job.id },
        { kind: 'CAPTURE', amount: job.creditsCharged, jobId: job.id },
      ]);
    }
  });

  it('lists 5 or 40 jobs with their accounts and webhook attempts in the same few statements', async () => {
    const acc = await h.services.accounts.create(OPERATOR, { name: 'Hooked', credits: 100 });
    const key = await warmKey(acc.id);
    const jobs: string[] = [];
    for (let i = 0; i < 40; i++) {
      jobs.push(await factories(h).job({ accountId: acc.id }, { input: { webhookUrl: 'https://example.com/hook' } }));
    }
    const db = new pg.Client({ connectionString: h.clientUrl });
    await db.connect();
    try {
      for (const [i, jobId] of jobs.entries()) {
        for (let attempt = 1; attempt <= (i % 3) + 1; attempt++) {
          await db.query(
            `insert into webhook_attempt (job_id, event_id, event_type, attempt, status_code, duration_ms) values ($1, $2, 'job.succeeded', $3, $4, 5)`,
            [jobId, `msg_${i}`, attempt, attempt === (i % 3) + 1 ? 200 : 500],
          );
        }
      }
    } finally {
      await db.end();
    }

    type Row = { id: string; account: { name: string }; webhook: { url: string; attempts: { attempt: number; statusCode: number }[] } };
    const { large: forty } = await expectPagesInSameStatements(h, {
      query: `query($first: Int) { jobs(first: $first) { edges { node { id account { name } webhook { url attempts { attempt statusCode } } } } } }`,
      key,
      nodes: (data: { jobs: Connection<Row> }) => nodesOf(data.jobs),
      sizes: [5, 40],
    });
    for (const node of forty.nodes) {
      const i = jobs.indexOf(node.id);
      const tries = (i % 3) + 1;
      expect(node.account).toEqual({ name: 'Hooked' });
      expect(node.webhook.attempts).toEqual(
        Array.from({ length: tries }, (_, n) => ({ attempt: n + 1, statusCode: n + 1 === tries ? 200 : 500 })),
      );
    }
  });

  it('keeps `me` at one query once the key is cached, and its new fields at one more each', async () => {
    const acc = await h.services.accounts.create(OPERATOR, { name: 'Me Myself', credits: 5, membershipDays: 10 });
    const key = await warmKey(acc.id);
    await chargedTask(acc.id, 'PARSE', 1);
    const plain = await countStatements(() =>
      h.gql<MeData>('{ me { id name credits { available held } membership { plan status active } } }', {}, key),
    );
    expect(plain.result.data.me).toMatchObject({
      name: 'Me Myself',
      credits: { available: 4, held: 0 },
      membership: { plan: 'monthly', active: true },
    });
    expect(plain.statements).toHaveLength(1);

    const full = await countStatements(() =>
      h.gql<MeData>(
        `query($from: DateTime!, $to: DateTime!) { me { id apiKeys { name last4 } usage(from: $from, to: $to) { operation credits tasks } } }`,
        window(),
        key,
      ),
    );
    expect(full.result.errors).toBeUndefined();
    expect(full.result.data.me.usage).toEqual([{ operation: 'PARSE', credits: 1, tasks: 1 }]);
    expect(full.result.data.me.apiKeys).toEqual([{ name: 'counted', last4: key.slice(-4) }]);
    expect(full.statements).toHaveLength(3);
    // The key list never reads a key's hash.
    const keyList = full.statements.filter((q) => /from "api_key"/.test(q));
    expect(keyList).toHaveLength(1);
    expect(keyList[0]).not.toMatch(/secret_hash/);
  });

  it('refuses `accounts` to a non-analyst and shows the caller’s own history with its jobs', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const forbidden = await h.gql(`{ accounts { edges { node { id apiKeys { id } } } } }`, {}, key);
    expect(forbidden.errors?.[0].extensions.code).toBe('FORBIDDEN');
    expect(forbidden.data).toBeNull();

    const jobId = await chargedTask(accountId, 'TRANSCRIBE', 2);
    const own = await h.gql<HistoryData>(HISTORY, {}, key);
    expect(own.errors).toBeUndefined();
    expect(nodesOf(own.data.creditHistory)).toEqual([
      { kind: 'CAPTURE', jobId, job: { id: jobId, status: 'SUCCEEDED', account: { id: accountId, name: 'Test account' } } },
      { kind: 'HOLD', jobId, job: { id: jobId, status: 'SUCCEEDED', account: { id: accountId, name: 'Test account' } } },
      { kind: 'GRANT', jobId: null, job: null },
    ]);

    // Another account's history (and so its jobs) stays closed to a non-analyst.
    const other = await h.account();
    const foreign = await h.gql(HISTORY, { accountId: other.accountId }, key);
    expect(foreign.errors?.[0].extensions.code).toBe('FORBIDDEN');
  });

  it('lets analysts follow another account’s entries to its jobs and keys; a key without the keys scope sees no keys', async () => {
    const analyst = await h.services.accounts.create(OPERATOR, { name: 'Ana Two', roles: ['admin'] });
    const analystKey = (await h.services.apiKeys.create(OPERATOR, analyst.id, 'admin')).key;
    const customer = await h.services.accounts.create(OPERATOR, { name: 'Cu Stomer', credits: 3 });
    const jobId = await chargedTask(customer.id, 'PARSE', 1);
    const history = await h.gql<HistoryData>(HISTORY, { accountId: customer.id }, analystKey);
    expect(history.errors).toBeUndefined();
    expect(history.data.creditHistory.edges[0].node.job).toEqual({
      id: jobId,
      status: 'SUCCEEDED',
      account: { id: customer.id, name: 'Cu Stomer' },
    });

    const reader = (await h.services.apiKeys.create(OPERATOR, customer.id, 'reader', ['read'])).key;
    const noKeys = await h.gql('{ me { id apiKeys { id } } }', {}, reader);
    expect(noKeys.errors?.[0].extensions.code).toBe('FORBIDDEN');
    const badWindow = await h.gql(
      'query($f: DateTime!, $t: DateTime!) { me { usage(from: $f, to: $t) { tasks } } }',
      { f: window().to, t: window().from },
      reader,
    );
    expect(badWindow.errors?.[0].extensions.code).toBe('INVALID_INPUT');
  });
});
