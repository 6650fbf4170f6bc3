import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { JobQueue } from '../../src/modules/jobs/job-queue.js';
import { UNREADABLE_SECRET } from '../../src/modules/webhooks/webhook.service.js';
import { createHttpApp, openOrm, createServices, startWorkers } from '../../src/root.js';
import type { FakeSite } from '../fakes/site.fake.js';
import { verifyReference, type FakeWebhookReceiver } from '../fakes/webhook-receiver.fake.js';
import { TEST_PEPPER, type Harness } from '../support/harness.js';
import { transcriptionWorld, type TranscriptionWorld } from '../support/world.js';
import { TEST_DATABASES } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { GqlError } from '../support/bodies.js';

const OTHER_PEPPER = 'another-pepper-0123456789abcdef012345';
const UNDECRYPTABLE_LOG = 'webhook secret does not decrypt: is API_KEY_PEPPER the one it was encrypted with?';

/** A log that keeps its lines, to read what an operator would see. */
function memoryLog(): { logger: Logger; text: () => string } {
  const lines: string[] = [];
  const sink = new Writable({ write: (c, _e, done) => (lines.push(c.toString()), done()) });
  return { logger: pino({ level: 'info' }, sink), text: () => lines.join('') };
}

/** A whole gateway (app, queue, workers) on the harness's database, started with `pepper`: a second instance, or a restart. */
async function gateway(h: Harness, pepper: string, logger: Logger) {
  const orm = await openOrm(h.clientUrl, 2);
  const queue = new JobQueue(h.clientUrl, logger, h.config.webhooks.retryDelaySeconds);
  await queue.start();
  const services = createServices({ ...h.config, apiKeyPepper: pepper }, orm, logger, { queue });
  await startWorkers(services, queue);
  const app = await createHttpApp(services, orm);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return {
    services,
    async gql<T = unknown>(query: string, variables: Record<string, unknown>, key: string) {
      const res = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query, variables }),
      });
      return (await res.json()) as { data: T; errors?: GqlError[] };
    },
    async close() {
      await app.close();
      await queue.stop();
      await services.close();
      await orm.close(true);
    },
  };
}

const until = <T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 30_000) =>
  waitFor(probe, { describe: what, timeout: ms, interval: 100 }) as Promise<T>;

/**
 * Webhook signing secrets at rest: each ciphertext is bound to its account (AES-GCM associated
 * data), older unbound ones are read once and sealed again, and a secret that does not decrypt is
 * an error (logged, the delivery not sent), never silently replaced by a new one.
 */
describe.each(TEST_DATABASES)('webhook signing secrets at rest (%s database)', (database) => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;
  let receiver: FakeWebhookReceiver;

  beforeAll(async () => {
    world = await transcriptionWorld({
      media: [{ path: '/talk.mp3', seconds: 5 }],
      webhookReceiver: true,
      database,
      // No queue of its own: deliveries are made by the gateways each test starts, with the pepper it chooses.
      queue: false,
    });
    ({ h, site, receiver } = world);
  }, 60_000);
  afterAll(() => world?.close());

  const stored = async (accountId: string) =>
    (await h.sql<{ s: string }>(`select encode(secret_enc, 'hex') as s from webhook_secret where account_id = ?`, [accountId]))[0]?.s;
  const read = (key: string) =>
    h.gql<{ webhookSecret: { secret: string; createdAt: string } }>(`{ webhookSecret { secret createdAt } }`, {}, key);

  it('does not decrypt a secret copied to another account’s row, and keeps that row as it is', async () => {
    const a = await h.account();
    const b = await h.account();
    const secretA = (await read(a.key)).data.webhookSecret.secret;
    const secretB = (await read(b.key)).data.webhookSecret.secret;
    await h.sql(
      `update webhook_secret set secret_enc = (select secret_enc from webhook_secret where account_id = ?) where account_id = ?`,
      [a.accountId, b.accountId],
    );
    const copied = await stored(b.accountId);

    const res = await read(b.key);
    expect(res.data).toBeNull();
    expect(res.errors?.[0].extensions.code).toBe('INTERNAL_ERROR');
    expect(res.errors?.[0].message).toContain('cannot be read by this server');
    expect(JSON.stringify(res)).not.toContain(secretA);
    expect(JSON.stringify(res)).not.toContain(secretB);
    expect(await stored(b.accountId)).toBe(copied);
    // The owner's own secret still reads; b's owner can replace the broken one deliberately.
    expect((await read(a.key)).data.webhookSecret.secret).toBe(secretA);
    const rotated = (await h.gql<{ rotateWebhookSecret: { secret: string } }>(`mutation { rotateWebhookSecret { secret } }`, {}, b.key))
      .data.rotateWebhookSecret.secret;
    expect(rotated).toMatch(/^whsec_/);
    expect((await read(b.key)).data.webhookSecret.secret).toBe(rotated);
  });

  it('reads a secret sealed before secrets were bound to their account, and seals it again bound, the same secret', async () => {
    const { key, accountId } = await h.account();
    // The format every secret had before: IV, tag, ciphertext, no associated data.
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const cryptKey = Buffer.from(hkdfSync('sha256', TEST_PEPPER, 'mediagate', 'webhook signing secrets', 32));
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', cryptKey, iv);
    const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    const legacy = Buffer.concat([iv, cipher.getAuthTag(), body]);
    await h.sql(`insert into webhook_secret (account_id, secret_enc, created_at) values (?, ?, '2026-01-02T03:04:05Z')`, [
      accountId,
      legacy,
    ]);

    const first = await read(key);
    expect(first.data.webhookSecret).toEqual({ secret, createdAt: '2026-01-02T03:04:05.000Z' });
    const resealed = await stored(accountId);
    expect(resealed).not.toBe(legacy.toString('hex'));
    expect(Buffer.from(resealed, 'hex').subarray(0, 3).toString()).toBe('v2:');
    expect((await read(key)).data.webhookSecret).toEqual({ secret, createdAt: '2026-01-02T03:04:05.000Z' });
    expect(await stored(accountId)).toBe(resealed);

    // Sealed again, it is bound: copied to another account it no longer decrypts there.
    const other = await h.account();
    await read(other.key);
    await h.sql(`update webhook_secret set secret_enc = decode(?, 'hex') where account_id = ?`, [resealed, other.accountId]);
    expect((await read(other.key)).errors?.[0].extensions.code).toBe('INTERNAL_ERROR');
  });

  it('on a gateway started with another pepper: the delivery fails with a clear reason and log line, nothing is replaced; the right pepper delivers with the same secret', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const secret = (await read(key)).data.webhookSecret.secret;
    const ciphertext = await stored(accountId);

    const log = memoryLog();
    const wrong = await gateway(h, OTHER_PEPPER, log.logger);
    let jobId: string;
    try {
      // A key that instance accepts (keys are hashed with the pepper too).
      const wrongKey = (await wrong.services.apiKeys.create(OPERATOR, accountId, 'wrong pepper')).key;
      const refused = await wrong.gql(`{ webhookSecret { secret } }`, {}, wrongKey);
      expect(refused.data).toBeNull();
      expect(refused.errors?.[0]).toMatchObject({ extensions: { code: 'INTERNAL_ERROR' } });
      expect(refused.errors?.[0].message).toContain('It was kept as it is; rotateWebhookSecret replaces it.');

      const started = await wrong.gql<{ startTranscription: { id: string } }>(
        `mutation($i: TranscribeInput!) { startTranscription(input: $i) { id } }`,
        { i: { mediaUrl: `${site.origin}/talk.mp3`, webhookUrl: `${receiver.origin}/pepper-${database}` } },
        wrongKey,
      );
      jobId = started.data.startTranscription.id;
      const attempts = await until('a failed attempt', async () => {
        const rows = await h.sql<{ status_code: number | null; error: string }>(
          `select status_code, error from webhook_attempt where job_id = ? order by id`,
          [jobId],
        );
        return rows.length > 0 && rows;
      });
      expect(attempts[0]).toEqual({ status_code: null, error: UNREADABLE_SECRET });
      const onTheJob = await wrong.gql<{ job: { webhook: { attempts: unknown[] } } }>(
        `query($id: ID!) { job(id: $id) { webhook { attempts { statusCode error } } } }`,
        { id: jobId },
        wrongKey,
      );
      expect(onTheJob.data.job.webhook.attempts[0]).toEqual({ statusCode: null, error: UNREADABLE_SECRET });
    } finally {
      await wrong.close();
    }
    // Nothing was sent, unsigned or otherwise, and the stored secret is the one it was.
    expect(receiver.at(`/pepper-${database}`)).toHaveLength(0);
    expect(await stored(accountId)).toBe(ciphertext);
    const lines = log
      .text()
      .split('\n')
      .filter((l) => l.includes(UNDECRYPTABLE_LOG));
    expect(lines.length).toBeGreaterThanOrEqual(2); // the read and the delivery
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ level: 50, accountId, msg: UNDECRYPTABLE_LOG });
    expect(log.text()).not.toContain(secret.slice(6));
    expect(log.text()).not.toContain(OTHER_PEPPER);

    // The operator restarts with the right pepper: the retry goes out, signed with the same secret.
    const right = await gateway(h, TEST_PEPPER, pino({ level: 'silent' }));
    try {
      const [delivery] = await until(
        'the delivery',
        async () => receiver.at(`/pepper-${database}`).length > 0 && receiver.at(`/pepper-${database}`),
      );
      expect(verifyReference(secret, delivery.headers, delivery.body)).toBe(true);
      expect(JSON.parse(delivery.body)).toMatchObject({ type: 'job.succeeded', data: { id: jobId! } });
      expect(
        (await right.gql<{ webhookSecret: { secret: string } }>(`{ webhookSecret { secret } }`, {}, key)).data.webhookSecret.secret,
      ).toBe(secret);
    } finally {
      await right.close();
    }
  }, 90_000);
});
