import { randomUUID } from 'node:crypto';
import { createHarness, type GqlAnswer, type Harness } from '../support/harness.js';
import { factories } from '../support/factories.js';
import { nextMillisecond } from '../support/wait-for.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { Connection, ErrorBody, GqlBody } from '../support/bodies.js';

describe('GraphQL account area', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  /** A finished job without calling a provider: hold, then release. */
  const failedJob = (accountId: string) =>
    factories(h).job({ accountId }, { status: 'FAILED', input: { n: randomUUID() }, error: { code: 'NO_MEDIA_FOUND', message: 'none' } });

  it('pages jobs with cursors that stay correct when rows arrive between pages', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const ids: string[] = [];
    // A millisecond of its own each, so that newest first is the reverse of the order they were made in.
    for (let i = 0; i < 5; i++) {
      ids.push(await failedJob(accountId));
      await nextMillisecond();
    }
    const newestFirst = [...ids].reverse();
    const page = (after: string | null) =>
      h.gql<{ jobs: Connection<{ id: string; status: string }> & { pageInfo: { hasNextPage: boolean; endCursor: string | null } } }>(
        `query($after: String) { jobs(first: 2, after: $after) { edges { cursor node { id status } } pageInfo { hasNextPage endCursor } } }`,
        { after },
        key,
      );
    const p1 = (await page(null)).data.jobs;
    expect(p1.edges.map((e) => e.node.id)).toEqual(newestFirst.slice(0, 2));
    expect(p1.pageInfo.hasNextPage).toBe(true);
    await failedJob(accountId); // arrives between pages: must not shift the next page
    const p2 = (await page(p1.pageInfo.endCursor)).data.jobs;
    expect(p2.edges.map((e) => e.node.id)).toEqual(newestFirst.slice(2, 4));
    const p3 = (await page(p2.pageInfo.endCursor)).data.jobs;
    expect(p3.edges.map((e) => e.node.id)).toEqual(newestFirst.slice(4));
    expect(p3.pageInfo.hasNextPage).toBe(false);
    const bad = await h.gql(`{ jobs(after: "nonsense") { edges { cursor } } }`, {}, key);
    expect(bad.errors?.[0].extensions.code).toBe('INVALID_INPUT');
  });

  it('pages rows made in the same instant (one statement, one now()) one by one without skipping any', async () => {
    const { key, accountId } = await h.account({ credits: 1 });
    await h.sql(`update account set roles = '{analyst}' where id = ?`, [accountId]);
    // Five grants, four failed jobs and three accounts, each set written by one statement: the ledger
    // writes its batches this way, so their rows share a creation time to the microsecond.
    await h.sql(
      `with b as (update credit_balance set available = available + 5 where account_id = ?)
       insert into credit_entry (account_id, kind, amount, available_delta, held_delta, reason)
       select ?, 'GRANT', 1, 1, 0, 'grant ' || n from generate_series(1, 5) n`,
      [accountId, accountId],
    );
    await h.sql(
      `insert into job (id, account_id, operation, status, input, hold_amount, credits_charged, deadline_at, finished_at)
       select gen_random_uuid(), ?, 'PARSE', 'FAILED', jsonb_build_object('n', n), 0, 0, now(), now() from generate_series(1, 4) n`,
      [accountId],
    );
    const before = (await h.sql<{ n: string }>(`select count(*) as n from account`))[0].n;
    await h.sql(`insert into account (id, name) select gen_random_uuid(), 'same instant ' || n from generate_series(1, 3) n`);
    const walk = async (field: string, args: string, total: number) => {
      const seen: string[] = [];
      let after: string | null = null;
      for (let page = 0; page <= total; page++) {
        const res: GqlAnswer<
          Record<string, Connection<{ id: string }> & { pageInfo: { hasNextPage: boolean; endCursor: string | null } }>
        > = await h.gql(
          `query($after: String) { ${field}(first: 1, after: $after${args}) { edges { node { id } } pageInfo { hasNextPage endCursor } } }`,
          { after },
          key,
        );
        expect(res.errors).toBeUndefined();
        seen.push(...res.data[field].edges.map((e) => String(e.node.id)));
        if (!res.data[field].pageInfo.hasNextPage) break;
        after = res.data[field].pageInfo.endCursor;
      }
      return seen;
    };
    const entries = await walk('creditHistory', ', kinds: [GRANT]', 6);
    expect(new Set(entries).size).toBe(6);
    expect(new Set(await walk('jobs', '', 4)).size).toBe(4);
    const accounts = await walk('accounts', '', Number(before) + 3);
    expect(new Set(accounts).size).toBe(Number(before) + 3);
    expect(await h.ledgerSums(accountId)).toEqual(await h.balance(accountId));
  });

  it('reads the credit history by kind, and refuses other accounts’ history and jobs', async () => {
    const me = await h.account({ credits: 4 });
    const other = await h.account({ credits: 4 });
    const otherJob = await failedJob(other.accountId);
    await failedJob(me.accountId);
    const holds = await h.gql<{ creditHistory: Connection<{ kind: string; amount: number; availableDelta: number; heldDelta: number }> }>(
      `{ creditHistory(kinds: [HOLD, RELEASE]) { edges { node { kind amount availableDelta heldDelta jobId } } } }`,
      {},
      me.key,
    );
    expect(holds.data.creditHistory.edges.map((e) => [e.node.kind, e.node.amount, e.node.availableDelta, e.node.heldDelta])).toEqual([
      ['RELEASE', 1, 1, -1],
      ['HOLD', 1, -1, 1],
    ]);
    const foreign = await h.gql(`query($a: ID) { creditHistory(accountId: $a) { edges { cursor } } }`, { a: other.accountId }, me.key);
    expect(foreign.errors?.[0].extensions.code).toBe('FORBIDDEN');
    const job = await h.gql(`query($id: ID!) { job(id: $id) { id } }`, { id: otherJob }, me.key);
    expect(job.errors?.[0].extensions.code).toBe('NOT_FOUND');
    const garbage = await h.gql(`{ job(id: "not-a-uuid") { id } }`, {}, me.key);
    expect(garbage.errors?.[0].extensions.code).toBe('NOT_FOUND');
  });

  it('creates keys shown once, lists them without secrets, and limits a key to its scopes', async () => {
    const { key } = await h.account();
    const created = await h.gql<{ createApiKey: { key: string; apiKey: unknown } }>(
      `mutation { createApiKey(name: "reader", scopes: ["read"]) { key apiKey { id name scopes createdAt lastUsedAt revokedAt } } }`,
      {},
      key,
    );
    expect(created.errors).toBeUndefined();
    const reader = created.data.createApiKey;
    expect(reader.key).toMatch(/^mg_live_/);
    expect(reader.apiKey).toMatchObject({ name: 'reader', scopes: ['read'], lastUsedAt: null, revokedAt: null });
    const listed = await h.gql<{ apiKeys: { id: string; name: string }[] }>(`{ apiKeys { id name scopes last4 } }`, {}, key);
    expect(listed.data.apiKeys.map((k) => k.name)).toEqual(['test', 'reader']);
    expect(JSON.stringify(listed)).not.toContain(reader.key);
    // The read-only key may read but not work, nor mint itself more power.
    expect((await h.gql(`{ me { id } }`, {}, reader.key)).errors).toBeUndefined();
    const parse = await h.rest('/api/parse', { url: 'https://video.example/x' }, reader.key);
    expect(parse.statusCode).toBe(403);
    expect(parse.json<ErrorBody>().error.code).toBe('FORBIDDEN');
    const escalate = await h.gql(`mutation { createApiKey(scopes: ["parse"]) { key } }`, {}, reader.key);
    expect(escalate.errors?.[0].extensions.code).toBe('FORBIDDEN');
    const unknownScope = await h.gql(`mutation { createApiKey(scopes: ["root"]) { key } }`, {}, key);
    expect(unknownScope.errors?.[0].extensions).toMatchObject({ code: 'INVALID_INPUT', details: { scopes: expect.any(String) } });
  });

  it('turns introspection off in production unless enabled', async () => {
    const prod = await createHarness({ NODE_ENV: 'production' }, undefined, { shareDatabaseOf: h });
    try {
      const { key } = await prod.account();
      const res = await prod.gql('{ __schema { queryType { name } } }', {}, key);
      expect(res.errors?.[0].extensions.code).toBe('INVALID_INPUT');
      expect(res.errors?.[0].message).toMatch(/introspection/i);
    } finally {
      await prod.close();
    }
    const dev = await h.gql<{ __schema: { queryType: { name: string } } }>(
      '{ __schema { queryType { name } } }',
      {},
      (await h.account()).key,
    );
    expect(dev.data.__schema.queryType.name).toBe('Query');
  });

  it('answers queries over GET (GraphQL over HTTP) but never runs a mutation from a GET', async () => {
    const { key, accountId } = await h.account();
    const get = (q: string) => h.request('GET', `/graphql?query=${encodeURIComponent(q)}`, { headers: { authorization: `Bearer ${key}` } });
    const query = await get('{ me { id } }');
    expect(query.statusCode).toBe(200);
    expect(query.json<GqlBody<{ me: { id: string } }>>().data.me.id).toBe(accountId);
    // A caller's own data: no cache along the way may keep it.
    expect(query.headers['cache-control']).toBe('no-store');
    const mutation = await get('mutation { createApiKey(name: "via-get") { key } }');
    expect(mutation.statusCode).toBe(405);
    expect((await h.services.apiKeys.list(OPERATOR, accountId)).map((k) => k.name)).toEqual(['test']);
  });

  it('masks unexpected errors: no stack, no SQL', async () => {
    const { key } = await h.account();
    const orig = h.services.jobs.list.bind(h.services.jobs);
    h.services.jobs.list = async () => {
      throw new Error('relation "job" does not exist at character 15 (select * from job)');
    };
    try {
      const res = await h.gql(`{ jobs { edges { cursor } } }`, {}, key);
      expect(res.errors?.[0]).toEqual({ message: 'An internal error occurred.', path: ['jobs'], extensions: { code: 'INTERNAL_ERROR' } });
    } finally {
      h.services.jobs.list = orig;
    }
  });
});
