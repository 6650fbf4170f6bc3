import { createHarness, type Harness } from '../support/harness.js';
import { waitFor } from '../support/wait-for.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import type { ErrorBody } from '../support/bodies.js';

describe('idempotency keys', () => {
  let h: Harness;
  let site: FakeSite;
  let release: () => void = () => {};
  beforeAll(async () => {
    site = await startFakeSite();
    const html = `<html><head><meta property="og:video" content="${'https://cdn.example/a.mp4'}"><meta property="og:video:type" content="video/mp4"></head></html>`;
    site.page('/v', html);
    site.page('/w', html.replace('a.mp4', 'b.mp4'));
    // A page that answers only when the test says so: the first request is still running meanwhile.
    site.route('/slow', (_req, res) => {
      release = () => res.writeHead(200, { 'content-type': 'text/html' }).end(html);
    });
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort });
  });
  afterAll(async () => {
    await h.close();
    await site.close();
  });

  it('replays the first result and charges once, on both doors', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const first = await h.rest('/api/parse', { url: `${site.origin}/v` }, key, { 'idempotency-key': 'order-1' });
    expect(first.statusCode).toBe(200);
    const again = await h.rest('/api/parse', { quality: '1080', url: `${site.origin}/v` }, key, { 'idempotency-key': 'order-1' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first.json());
    const gql = await h.gql<{ parse: unknown }>(
      `mutation { parse(input: { url: "${site.origin}/v" }, idempotencyKey: "order-1") { id credits { charged balance } } }`,
      {},
      key,
    );
    expect(gql.data.parse).toEqual({ id: first.json<{ id: string }>().id, credits: { charged: 1, balance: 4 } });
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 0 });
    expect((await h.repositories.jobs.list(accountId, 10, null)).edges).toHaveLength(1);
  });

  it('refuses the same key with a different body (422) and keys are per account', async () => {
    const a = await h.account({ credits: 5 });
    const b = await h.account({ credits: 5 });
    await h.rest('/api/parse', { url: `${site.origin}/v` }, a.key, { 'idempotency-key': 'k' });
    const other = await h.rest('/api/parse', { url: `${site.origin}/w` }, a.key, { 'idempotency-key': 'k' });
    expect(other.statusCode).toBe(422);
    expect(other.json<ErrorBody>().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const elsewhere = await h.rest('/api/parse', { url: `${site.origin}/w` }, b.key, { 'idempotency-key': 'k' });
    expect(elsewhere.statusCode).toBe(200);
    expect(await h.balance(a.accountId)).toEqual({ available: 4, held: 0 });
  });

  it('answers 409 while the first request with the key is still running, then replays it', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const first = h.rest('/api/parse', { url: `${site.origin}/slow` }, key, { 'idempotency-key': 'slow-1' });
    // Wait until the first request has reached the page (its job and hold exist).
    await waitFor(() => site.hits.includes('GET /slow'), { describe: 'the first request to reach the page', interval: 20 });
    const second = await h.rest('/api/parse', { url: `${site.origin}/slow` }, key, { 'idempotency-key': 'slow-1' });
    expect(second.statusCode).toBe(409);
    expect(second.json<ErrorBody>().error.code).toBe('IDEMPOTENCY_KEY_IN_USE');
    release();
    expect((await first).statusCode).toBe(200);
    const third = await h.rest('/api/parse', { url: `${site.origin}/slow` }, key, { 'idempotency-key': 'slow-1' });
    expect(third.statusCode).toBe(200);
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 0 });
  });

  it('lets a failed task be retried with its key, and refuses malformed keys', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const failed = await h.rest('/api/parse', { url: `${site.origin}/missing` }, key, { 'idempotency-key': 'retry-me' });
    expect(failed.statusCode).toBe(422);
    site.page('/missing', `<html><head><meta property="og:video" content="https://cdn.example/m.mp4"></head></html>`);
    const retried = await h.rest('/api/parse', { url: `${site.origin}/missing` }, key, { 'idempotency-key': 'retry-me' });
    expect(retried.statusCode).toBe(200);
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 0 });
    const bad = await h.rest('/api/parse', { url: `${site.origin}/v` }, key, { 'idempotency-key': 'has space' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json<ErrorBody>().error.details).toHaveProperty('idempotencyKey');
  });

  it('charges exactly once when many twins race with one key', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const results = await Promise.all(
      Array.from({ length: 12 }, () =>
        h.rest('/api/parse', { url: `${site.origin}/v` }, key, { 'idempotency-key': 'race' }).then((r) => r.statusCode),
      ),
    );
    expect(results.every((s) => s === 200 || s === 409)).toBe(true);
    expect(results.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 4, held: 0 });
  });
});
