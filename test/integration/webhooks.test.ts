import { Webhook } from 'standardwebhooks';
import type { FakeSite } from '../fakes/site.fake.js';
import { verifyReference, type FakeWebhookReceiver } from '../fakes/webhook-receiver.fake.js';
import type { Harness } from '../support/harness.js';
import { transcriptionWorld, type TranscriptionWorld } from '../support/world.js';
import { waitFor } from '../support/wait-for.js';
import { jobBody, type Connection, type ErrorBody } from '../support/bodies.js';

describe('webhooks for jobs (Standard Webhooks)', () => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;
  let receiver: FakeWebhookReceiver;

  beforeAll(async () => {
    world = await transcriptionWorld({ media: [{ path: '/talk.mp3', seconds: 5 }], webhookReceiver: true });
    ({ h, site, receiver } = world);
    site.endless('/endless.mp3', 'audio/mpeg');
  }, 60_000);
  afterAll(() => world?.close());

  const until = <T>(what: string, probe: () => Promise<T | null | undefined | false> | T | null | undefined | false, ms = 20_000) =>
    waitFor(probe, { describe: what, timeout: ms, interval: 100 }) as Promise<T>;

  /** The deliveries to a path once there are at least `n`. */
  const delivered = (path: string, n = 1) => (receiver.at(path).length >= n ? receiver.at(path) : null);

  const secretOf = async (key: string) => {
    const res = await h.gql<{ webhookSecret: { secret: string; createdAt: string } }>(`{ webhookSecret { secret createdAt } }`, {}, key);
    expect(res.errors).toBeUndefined();
    return res.data.webhookSecret.secret as string;
  };

  it('POSTs the finished job, signed with the account’s secret, to a webhook given on startTranscription', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const secret = await secretOf(key);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(await secretOf(key)).toBe(secret); // the same on every read
    const started = await h.gql<{ startTranscription: { id: string } }>(
      `mutation($i: TranscribeInput!) { startTranscription(input: $i) { id status } }`,
      { i: { mediaUrl: `${site.origin}/talk.mp3`, webhookUrl: `${receiver.origin}/gql-hook` } },
      key,
    );
    expect(started.errors).toBeUndefined();
    const jobId = started.data.startTranscription.id;
    const [delivery] = await until('a delivery', () => delivered('/gql-hook'));
    expect(delivery.headers['content-type']).toBe('application/json');
    expect(delivery.headers['webhook-id']).toMatch(/^msg_/);
    expect(verifyReference(secret, delivery.headers, delivery.body)).toBe(true);
    // The package's own verification agrees, and a tampered body fails both.
    expect(() => new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>)).not.toThrow();
    expect(verifyReference(secret, delivery.headers, delivery.body.replace('SUCCEEDED', 'FAILED'))).toBe(false);
    const event = JSON.parse(delivery.body);
    expect(event).toMatchObject({
      type: 'job.succeeded',
      data: { id: jobId, status: 'SUCCEEDED', operation: 'TRANSCRIBE', creditsCharged: 1 },
    });
    expect(new Date(event.timestamp).toISOString()).toBe(event.timestamp);
    expect(event.data.result.segments.length).toBeGreaterThan(0);
    // The attempt is on the job, through both doors.
    const job = await until('the attempt on the job', async () => {
      const r = await h.gql<{ job: { webhook: { url: string; attempts: unknown[] } } }>(
        `query($id: ID!) { job(id: $id) { webhook { url attempts { attempt eventId eventType statusCode error } } } }`,
        { id: jobId },
        key,
      );
      return r.data.job.webhook.attempts.length > 0 && r.data.job;
    });
    expect(job.webhook).toEqual({
      url: `${receiver.origin}/gql-hook`,
      attempts: [{ attempt: 1, eventId: delivery.headers['webhook-id'], eventType: 'job.succeeded', statusCode: 200, error: null }],
    });
    const rest = await h.request('GET', `/api/jobs/${jobId}`, { headers: { authorization: `Bearer ${key}` } });
    expect(jobBody(rest).webhook?.attempts).toHaveLength(1);
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 0 });
  });

  it('takes webhookUrl in the REST body with Prefer: respond-async, and retries a receiver that fails, hangs or cuts the connection', async () => {
    const { key } = await h.account({ credits: 5 });
    const secret = await secretOf(key);
    // Two jobs at once, so that the retries' waits overlap: one receiver fails then hangs, the other
    // cuts the connection; both take the last attempt.
    const scripts = { '/flaky': [500, 'hang', 200], '/cut': ['cut', 200] } as const;
    const jobs = await Promise.all(
      Object.entries(scripts).map(async ([path, script]) => {
        receiver.script(path, [...script]);
        const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3`, webhookUrl: `${receiver.origin}${path}` }, key, {
          prefer: 'respond-async',
        });
        expect(res.statusCode).toBe(202);
        expect(jobBody(res).webhook).toEqual({ url: `${receiver.origin}${path}`, attempts: [] });
        return { path, id: res.json<{ id: string }>().id, attempts: script.length };
      }),
    );
    const recorded = await Promise.all(
      jobs.map(async ({ path, id, attempts: n }) => {
        const deliveries = await until(`${n} attempts at ${path}`, () => delivered(path, n), 30_000);
        // One event: the same id on every retry, each attempt signed anew and valid.
        expect(new Set(deliveries.map((d) => d.headers['webhook-id'])).size).toBe(1);
        for (const d of deliveries) expect(verifyReference(secret, d.headers, d.body)).toBe(true);
        return until(`${n} recorded attempts for ${path}`, async () => {
          const body = jobBody(await h.request('GET', `/api/jobs/${id}`, { headers: { authorization: `Bearer ${key}` } }));
          return body.webhook!.attempts.length >= n && body.webhook!.attempts;
        });
      }),
    );
    const [flaky, cut] = recorded;
    expect(flaky.map((a) => [a.attempt, a.statusCode])).toEqual([
      [1, 500],
      [2, null],
      [3, 200],
    ]);
    expect(flaky[0].error).toBe('The receiver answered 500.');
    expect(flaky[1].error).toBe('The receiver did not answer in time.');
    expect(cut.map((a) => [a.attempt, a.statusCode])).toEqual([
      [1, null],
      [2, 200],
    ]);
    expect(cut[0].error).toBe('The receiver could not be reached: the server closed the connection.');
    expect(JSON.stringify(recorded)).not.toContain('receiver-internal-text');
  }, 40_000);

  it('announces a canceled job, and a failed one with its error', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const started = await h.gql<{ startTranscription: { id: string } }>(
      `mutation($i: TranscribeInput!) { startTranscription(input: $i) { id } }`,
      { i: { mediaUrl: `${site.origin}/endless.mp3`, webhookUrl: `${receiver.origin}/cancel-hook` } },
      key,
    );
    const jobId = started.data.startTranscription.id;
    await h.gql(`mutation($id: ID!) { cancelJob(id: $id) { status } }`, { id: jobId }, key);
    const [canceled] = await until('the cancel event', () => delivered('/cancel-hook'));
    expect(JSON.parse(canceled.body)).toMatchObject({ type: 'job.canceled', data: { id: jobId, status: 'CANCELED', creditsCharged: 0 } });

    const failing = await h.gql<{ startTranscription: { id: string } }>(
      `mutation($i: TranscribeInput!) { startTranscription(input: $i) { id } }`,
      { i: { mediaUrl: `${site.origin}/missing.mp3`, webhookUrl: `${receiver.origin}/fail-hook` } },
      key,
    );
    const [failed] = await until('the failure event', () => delivered('/fail-hook'));
    expect(JSON.parse(failed.body)).toMatchObject({
      type: 'job.failed',
      data: { id: failing.data.startTranscription.id, status: 'FAILED', error: { code: 'CONTENT_UNAVAILABLE' }, creditsCharged: 0 },
    });
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
  });

  it('refuses a webhook URL on a private address at submission (422 URL_NOT_ALLOWED), through both doors, holding nothing', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const rest = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3`, webhookUrl: 'http://10.1.2.3/hook' }, key, {
      prefer: 'respond-async',
    });
    expect(rest.statusCode).toBe(422);
    expect(rest.json<ErrorBody>().error.code).toBe('URL_NOT_ALLOWED');
    const gql = await h.gql<{ job: unknown }>(
      `mutation($i: TranscribeInput!) { startTranscription(input: $i) { id } }`,
      { i: { mediaUrl: `${site.origin}/talk.mp3`, webhookUrl: 'http://169.254.169.254/latest' } },
      key,
    );
    expect(gql.errors?.[0].extensions.code).toBe('URL_NOT_ALLOWED');
    const bad = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3`, webhookUrl: 'ftp://x.example/hook' }, key, {
      prefer: 'respond-async',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json<ErrorBody>().error.details).toHaveProperty('webhookUrl');
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
    const jobs = await h.gql<{ jobs: Connection<{ id: string }> }>(`{ jobs { edges { node { id } } } }`, {}, key);
    expect(jobs.data.jobs.edges).toEqual([]);
  });

  it('rotates the secret: the old one stops verifying, the next delivery verifies with the new one', async () => {
    const { key } = await h.account({ credits: 5 });
    const old = await secretOf(key);
    const rotated = await h.gql<{ rotateWebhookSecret: { secret: string } }>(`mutation { rotateWebhookSecret { secret } }`, {}, key);
    const fresh = rotated.data.rotateWebhookSecret.secret;
    expect(fresh).not.toBe(old);
    expect(await secretOf(key)).toBe(fresh);
    await h.gql(
      `mutation($i: TranscribeInput!) { startTranscription(input: $i) { id } }`,
      { i: { mediaUrl: `${site.origin}/talk.mp3`, webhookUrl: `${receiver.origin}/rotated` } },
      key,
    );
    const [d] = await until('a delivery', () => delivered('/rotated'));
    expect(verifyReference(fresh, d.headers, d.body)).toBe(true);
    expect(verifyReference(old, d.headers, d.body)).toBe(false);
    // The secret is stored encrypted, never in clear.
    const rows = await h.sql(`select encode(secret_enc, 'escape') as s from webhook_secret`);
    for (const r of rows as { s: string }[]) expect(r.s).not.toContain(fresh.slice(6));
  });

  it('reading or rotating the secret needs the keys scope', async () => {
    const { key } = await h.account({ scopes: ['parse', 'transcribe', 'read'] });
    const res = await h.gql<{ webhookSecret: { secret: string } }>(`{ webhookSecret { secret } }`, {}, key);
    expect(res.errors?.[0].extensions.code).toBe('FORBIDDEN');
  });
});

describe('idempotency for queued work', () => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;
  beforeAll(async () => {
    world = await transcriptionWorld({
      media: [
        { path: '/talk.mp3', seconds: 5 },
        { path: '/other.mp3', seconds: 5 },
      ],
    });
    ({ h, site } = world);
  }, 60_000);
  afterAll(() => world?.close());

  it('the same Idempotency-Key with Prefer: respond-async returns the same job and holds once; another body is 422', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const send = (mediaUrl: string, k = 'job-key-1') =>
      h.rest('/api/transcribe', { mediaUrl }, key, { prefer: 'respond-async', 'idempotency-key': k });
    const [a, b] = await Promise.all([send(`${site.origin}/talk.mp3`), send(`${site.origin}/talk.mp3`)]);
    expect([a.statusCode, b.statusCode]).toEqual([202, 202]);
    expect(a.json<{ id: string }>().id).toBe(b.json<{ id: string }>().id);
    expect(a.headers.location).toBe(b.headers.location);
    const other = await send(`${site.origin}/other.mp3`);
    expect(other.statusCode).toBe(422);
    expect(other.json<ErrorBody>().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    // After it succeeded, the same key still answers with the same (finished) job and charges nothing more.
    await waitFor(async () => (await h.balance(accountId)).held === 0, {
      describe: 'the hold to be settled',
      timeout: 10_000,
      interval: 100,
    });
    const again = await send(`${site.origin}/talk.mp3`);
    expect(again.json()).toMatchObject({ id: a.json<{ id: string }>().id, status: 'SUCCEEDED' });
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 0 });
  });

  it('startTranscription takes idempotencyKey with the same rules', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const start = (mediaUrl: string) =>
      h.gql<{ startTranscription: { id: string } }>(
        `mutation($i: TranscribeInput!, $k: String) { startTranscription(input: $i, idempotencyKey: $k) { id } }`,
        { i: { mediaUrl }, k: 'gql-key' },
        key,
      );
    const first = await start(`${site.origin}/talk.mp3`);
    const second = await start(`${site.origin}/talk.mp3`);
    expect(second.data.startTranscription.id).toBe(first.data.startTranscription.id);
    expect((await start(`${site.origin}/other.mp3`)).errors?.[0].extensions.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const bad = await h.gql(
      `mutation { startTranscription(input: { mediaUrl: "${site.origin}/talk.mp3" }, idempotencyKey: "") { id } }`,
      {},
      key,
    );
    expect(bad.errors?.[0].extensions.code).toBe('INVALID_INPUT');
    const held = await h.balance(accountId);
    expect(held.available + held.held).toBe(5);
  });
});
