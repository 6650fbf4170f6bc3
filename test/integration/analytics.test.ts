import { factories, type Factories } from '../support/factories.js';
import { createHarness, type Harness } from '../support/harness.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { Connection } from '../support/bodies.js';

describe('analyst queries', () => {
  let h: Harness;
  let make: Factories;
  beforeAll(async () => {
    h = await createHarness();
    make = factories(h);
  });
  afterAll(() => h.close());

  const range = () => ({ from: new Date(Date.now() - 86_400_000).toISOString(), to: new Date(Date.now() + 86_400_000).toISOString() });
  type Usage = { creditUsage: { period: string; key: string; credits: number; tasks: number }[] };
  const USAGE = `query($from: DateTime!, $to: DateTime!, $by: UsageDimension, $g: UsageGrouping) {
    creditUsage(from: $from, to: $to, groupBy: $g, by: $by) { period key credits tasks } }`;

  it('sums what was consumed (captures only) per operation, for the caller’s own account', async () => {
    const a = await h.account({ credits: 20 });
    await make.job(a, { operation: 'PARSE', charged: 1 });
    await make.job(a, { operation: 'PARSE', charged: 1 });
    await make.job(a, { operation: 'TRANSCRIBE', charged: 3 });
    await make.job(a, { status: 'FAILED' });
    const other = await h.account({ credits: 20 });
    await make.job(other, { operation: 'PARSE', charged: 1 });
    const res = await h.gql<Usage>(USAGE, range(), a.key);
    expect(res.errors).toBeUndefined();
    const today = new Date();
    today.setUTCHours(0, 0, 0, 0);
    expect(res.data.creditUsage).toEqual([
      { period: today.toISOString(), key: 'PARSE', credits: 2, tasks: 2 },
      { period: today.toISOString(), key: 'TRANSCRIBE', credits: 3, tasks: 1 },
    ]);
    const byAccount = await h.gql<Usage>(USAGE, { ...range(), by: 'ACCOUNT', g: 'MONTH' }, a.key);
    expect(byAccount.data.creditUsage.map((b) => [b.key, b.credits])).toEqual([[a.accountId, 5]]);
  });

  it('lets analysts see every account, list accounts and read anyone’s history; others are refused', async () => {
    const analyst = await h.services.accounts.create(OPERATOR, { name: 'Ana Lyst', roles: ['analyst'] });
    const key = (await h.services.apiKeys.create(OPERATOR, analyst.id, 'analysis', ['read'])).key;
    const customer = await h.account({ credits: 7 });
    await make.job(customer, { operation: 'PARSE', charged: 1 });

    const usage = await h.gql<Usage>(USAGE, { ...range(), by: 'ACCOUNT' }, key);
    expect(usage.data.creditUsage.map((b) => b.key)).toContain(customer.accountId);

    const accounts = await h.gql<{ accounts: Connection<{ id: string }> }>(
      `{ accounts(first: 100) { edges { node { id credits { available } } } pageInfo { hasNextPage } } }`,
      {},
      key,
    );
    expect(accounts.data.accounts.edges.map((e) => e.node.id)).toEqual(expect.arrayContaining([analyst.id, customer.accountId]));

    const history = await h.gql<{ creditHistory: Connection<{ kind: string; amount: number }> }>(
      `query($a: ID) { creditHistory(accountId: $a) { edges { node { kind amount } } } }`,
      { a: customer.accountId },
      key,
    );
    expect(history.data.creditHistory.edges.map((e) => e.node.kind)).toEqual(['CAPTURE', 'HOLD', 'GRANT']);

    expect((await h.gql(`{ accounts { edges { cursor } } }`, {}, customer.key)).errors?.[0].extensions.code).toBe('FORBIDDEN');
  });

  it('refuses a reversed or too long range and unknown roles', async () => {
    const { key } = await h.account();
    const reversed = await h.gql<Usage>(USAGE, { from: range().to, to: range().from }, key);
    expect(reversed.errors?.[0].extensions).toMatchObject({ code: 'INVALID_INPUT', details: { from: expect.any(String) } });
    const long = await h.gql<Usage>(USAGE, { from: '2020-01-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }, key);
    expect(long.errors?.[0].extensions.code).toBe('INVALID_INPUT');
    await expect(h.services.accounts.create(OPERATOR, { name: 'x', roles: ['root'] })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});
