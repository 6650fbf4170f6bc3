import { createHarness, type Harness } from '../support/harness.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';

describe('credits under concurrency', () => {
  let h: Harness;
  let site: FakeSite;
  beforeAll(async () => {
    site = await startFakeSite();
    site.page(
      '/v',
      `<html><head><meta property="og:video" content="${site.origin}/v.mp4"><meta property="og:video:type" content="video/mp4"></head></html>`,
    );
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort });
  });
  afterAll(async () => {
    await h.close();
    await site.close();
  });

  it('lets exactly k of many parallel parses through for k credits; the rest get 402; the ledger sums', async () => {
    const k = 7;
    const attempts = 40;
    const { key, accountId } = await h.account({ credits: k });
    const results = await Promise.all(
      Array.from({ length: attempts }, (_, i) =>
        i % 2 === 0
          ? h.rest('/api/parse', { url: `${site.origin}/v` }, key).then((r) => r.statusCode)
          : h
              .gql(`mutation { parse(input: { url: "${site.origin}/v" }) { id } }`, {}, key)
              .then((r) => (r.errors ? (r.errors[0].extensions.code === 'INSUFFICIENT_CREDITS' ? 402 : 500) : 200)),
      ),
    );
    expect(results.filter((s) => s === 200)).toHaveLength(k);
    expect(results.filter((s) => s === 402)).toHaveLength(attempts - k);
    expect(await h.balance(accountId)).toEqual({ available: 0, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 0, held: 0 });
    const jobs = await h.repositories.jobs.list(accountId, 100, null);
    expect(jobs.edges.filter((e) => e.node.status === 'SUCCEEDED')).toHaveLength(k);
    expect(jobs.edges).toHaveLength(k);
  });

  it('resolves each hold exactly once: a second capture or release changes nothing', async () => {
    const { accountId } = await h.account({ credits: 3 });
    const principal = { accountId, apiKeyId: null, scopes: new Set(['parse']), isMember: true };
    const jobId = '5b0c1c57-9a3f-4c55-8e36-3c2f8e5f0a01';
    await h.services.tasks.openJob({
      jobId,
      accountId,
      apiKeyId: null,
      operation: 'PARSE',
      input: {},
      amount: 2,
      deadlineAt: new Date(Date.now() + 60_000),
    });
    expect(await h.balance(accountId)).toEqual({ available: 1, held: 2 });
    const [a, b, c] = await Promise.all([
      h.services.tasks.succeed(jobId, { ok: true }, 'test'),
      h.services.tasks.fail(jobId, 'FAILED', 'PROVIDER_ERROR', 'x'),
      h.services.tasks.succeed(jobId, { ok: true }, 'test'),
    ]);
    const resolutions = [a !== null, b, c !== null].filter(Boolean);
    expect(resolutions).toHaveLength(1);
    const bal = await h.balance(accountId);
    expect(bal.held).toBe(0);
    expect(bal.available === 1 || bal.available === 3).toBe(true);
    expect(await h.ledgerSums(accountId)).toEqual(bal);
    void principal;
  });

  it('the sweeper fails jobs past their deadline and releases their holds (a crash between hold and capture)', async () => {
    const { accountId } = await h.account({ credits: 5 });
    const jobId = '5b0c1c57-9a3f-4c55-8e36-3c2f8e5f0a02';
    await h.services.tasks.openJob({
      jobId,
      accountId,
      apiKeyId: null,
      operation: 'PARSE',
      input: {},
      amount: 4,
      deadlineAt: new Date(Date.now() - 1000),
    });
    expect(await h.balance(accountId)).toEqual({ available: 1, held: 4 });
    expect(await h.services.jobs.sweep()).toBeGreaterThanOrEqual(1);
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 5, held: 0 });
    const job = await h.repositories.jobs.get(accountId, jobId);
    expect(job.status).toBe('FAILED');
    expect(job.errorCode).toBe('PROVIDER_TIMEOUT');
    // A late success from the crashed worker is refused: it cannot capture a released hold.
    expect(await h.services.tasks.succeed(jobId, { late: true }, 'test')).toBeNull();
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
  });
});
