import { createHarness, type Harness } from '../support/harness.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import type { ErrorBody } from '../support/bodies.js';

describe('task deadlines', () => {
  let h: Harness;
  let site: FakeSite;
  beforeAll(async () => {
    site = await startFakeSite();
    // A page that never answers.
    site.route('/hang', () => {});
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort, PARSE_TIMEOUT_SECONDS: '0.5' });
  });
  afterAll(async () => {
    await h.close();
    await site.close();
  });

  it('answers 504 PROVIDER_TIMEOUT at the deadline and releases the hold', async () => {
    const { key, accountId } = await h.account({ credits: 2 });
    const started = Date.now();
    const res = await h.rest('/api/parse', { url: `${site.origin}/hang` }, key);
    const elapsed = Date.now() - started;
    expect(res.statusCode).toBe(504);
    expect(res.json<ErrorBody>().error.code).toBe('PROVIDER_TIMEOUT');
    expect(elapsed).toBeGreaterThanOrEqual(450);
    expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
    const jobs = await h.repositories.jobs.list(accountId, 5, null);
    expect(jobs.edges[0].node).toMatchObject({ status: 'FAILED', errorCode: 'PROVIDER_TIMEOUT', creditsCharged: 0 });
  });
});
