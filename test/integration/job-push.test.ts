import type { FastifyInstance } from 'fastify';
import { createClient } from 'graphql-ws';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { pino } from 'pino';
import WebSocket from 'ws';
import { LISTENER_NAME } from '../../src/db/notifications.js';
import { createHttpApp, openOrm, createServices } from '../../src/root.js';
import type { FakeSite } from '../fakes/site.fake.js';
import type { Harness } from '../support/harness.js';
import { startTranscription, transcriptionWorld, type FakeOpenAi, type TranscriptionWorld } from '../support/world.js';
import { TEST_DATABASES } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';

const DATABASES = TEST_DATABASES;

type Push = { status: string; progress: number };

const until = (what: string, done: () => boolean | Promise<boolean>, ms = 15_000) =>
  waitFor(done, { describe: what, timeout: ms, interval: 5 });

/**
 * A second gateway on the same database, without queue workers: a cancel sent here reaches the
 * worker of the first one only through the database, as between two instances behind a balancer.
 */
async function secondInstance(h: Harness): Promise<{ url: string; close(): Promise<void> }> {
  const orm = await openOrm(h.clientUrl, 2);
  const services = createServices(h.config, orm, pino({ level: 'silent' }));
  const app: FastifyInstance = await createHttpApp(services, orm);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    async close() {
      await app.close();
      await services.close();
      await orm.close(true);
    },
  };
}

/** Subscribes to jobUpdated over graphql-ws; `pushes` fills as they come, `ended` settles with the subscription. */
function subscribe(h: Harness, key: string, id: string) {
  const client = createClient({
    url: `${h.url.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${key}` },
    retryAttempts: 0,
  });
  const pushes: Push[] = [];
  const ended = new Promise<void>((resolve, reject) => {
    client.subscribe(
      { query: `subscription($id: ID!) { jobUpdated(id: $id) { status progress } }`, variables: { id } },
      { next: (msg) => void pushes.push((msg.data as { jobUpdated: Push }).jobUpdated), error: reject, complete: resolve },
    );
  });
  return { pushes, ended, dispose: () => client.dispose() };
}

describe.each(DATABASES)('job updates pushed by the database (%s database)', (database) => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;
  /** Answers after 20 ms per second of audio (1.5 s for the talk); while `stall` is set, only after a minute. */
  let openai: FakeOpenAi;
  let stall = false;
  beforeAll(async () => {
    world = await transcriptionWorld({
      media: [{ path: '/talk.mp3', seconds: 75 }],
      openai: { msPerAudioSecond: 20, respond: () => (stall ? { status: 500, body: {}, delayMs: 60_000 } : undefined) },
      database,
    });
    ({ h, site, openai } = world);
  }, 60_000);
  afterAll(() => world?.close());

  it('a cancel made through another instance stops the provider request here within 200 ms, and releases the credits', async () => {
    const other = await secondInstance(h);
    stall = true;
    try {
      const { key, accountId } = await h.account({ credits: 5 });
      const before = openai.requests.length;
      const started = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3`, language: 'en' }, key, {
        prefer: 'respond-async',
      });
      expect(started.statusCode).toBe(202);
      const id = started.json<{ id: string }>().id;
      await until('the provider request', () => openai.requests.length > before);
      const request = openai.requests[before];
      expect(await h.balance(accountId)).toEqual({ available: 3, held: 2 });

      const sentAt = performance.now();
      const canceled = await fetch(`${other.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({
          query: `mutation($id: ID!) { cancelJob(id: $id) { status creditsHeld creditsCharged } }`,
          variables: { id },
        }),
      });
      const answeredAt = performance.now();
      expect(((await canceled.json()) as { data: { cancelJob: unknown } }).data.cancelJob).toEqual({
        status: 'CANCELED',
        creditsHeld: 0,
        creditsCharged: 0,
      });

      await until('the provider request to close', () => request.closedAt !== null, 5_000);
      const ms = request.closedAt! - answeredAt;
      process.stdout.write(
        `[job-push ${database}] provider request closed ${(request.closedAt! - sentAt).toFixed(1)} ms after the cancel was sent, ${ms.toFixed(1)} ms after its response\n`,
      );
      expect(ms).toBeLessThan(200);

      const job = (
        await h.gql<{ job: unknown }>(`query($id: ID!) { job(id: $id) { status creditsHeld creditsCharged error { code } } }`, { id }, key)
      ).data.job;
      expect(job).toEqual({ status: 'CANCELED', creditsHeld: 0, creditsCharged: 0, error: { code: 'CANCELED' } });
      expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
      expect(await h.ledgerSums(accountId)).toEqual({ available: 5, held: 0 });
    } finally {
      stall = false;
      await other.close();
    }
  });

  it('pushes a job’s changes over jobUpdated: RUNNING with its progress, then SUCCEEDED', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const sub = subscribe(h, key, await startTranscription(h, key, { mediaUrl: `${site.origin}/talk.mp3` }));
    try {
      await sub.ended;
    } finally {
      await sub.dispose();
    }
    expect(sub.pushes.at(-1)).toEqual({ status: 'SUCCEEDED', progress: 1 });
    expect(sub.pushes.some((p) => p.status === 'RUNNING' && p.progress > 0 && p.progress < 1)).toBe(true);
    // In order, and each one a change: the row is re-read on each notification, sent only when it changed.
    const order = ['QUEUED', 'RUNNING', 'SUCCEEDED'];
    sub.pushes.slice(1).forEach((push, i) => {
      const previous = sub.pushes[i];
      expect(order.indexOf(push.status)).toBeGreaterThanOrEqual(order.indexOf(previous.status));
      expect(push.progress).toBeGreaterThanOrEqual(previous.progress);
      expect(push).not.toEqual(previous);
    });
    expect(await h.balance(accountId)).toEqual({ available: 3, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 3, held: 0 });
  });
});

// Only PostgreSQL has a listening connection to lose (the embedded database hands its notifications over in-process).
if (process.env.DATABASE_URL) {
  describe('job updates after the listening connection is lost (PostgreSQL)', () => {
    let world: TranscriptionWorld;
    let h: Harness;
    let site: FakeSite;
    let openai: FakeOpenAi;
    beforeAll(async () => {
      world = await transcriptionWorld({ media: [{ path: '/talk.mp3', seconds: 75 }], openai: { msPerAudioSecond: 20 } });
      ({ h, site, openai } = world);
    }, 60_000);
    afterAll(() => world?.close());

    // Well under the 30 s backstop: the final state must come from the reconnection's re-read.
    it('re-reads after reconnecting, so a subscriber gets the final state reached while nobody listened', async () => {
      // The test database's connections are allowed and refused from the server's own database.
      const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await admin.connect();
      const database = new URL(h.clientUrl).pathname.slice(1);
      const listeners = async () =>
        (await admin.query(`select pid from pg_stat_activity where application_name = $1 and datname = $2`, [LISTENER_NAME, database]))
          .rows;
      const { key } = await h.account({ credits: 5 });
      const before = openai.requests.length;
      const id = await startTranscription(h, key, { mediaUrl: `${site.origin}/talk.mp3` });
      const sub = subscribe(h, key, id);
      try {
        await until('the provider request', () => openai.requests.length > before);
        const [listener] = await listeners();
        // Nobody may connect to this test database for a while, so the listener cannot come back at once.
        await admin.query(`alter database ${database} allow_connections false`);
        const killed = await admin.query(
          `select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and datname = $2`,
          [LISTENER_NAME, database],
        );
        expect(killed.rowCount).toBe(1);
        await until(
          'the job to succeed',
          async () => (await h.sql<{ status: string }>(`select status from job where id = ?`, [id]))[0].status === 'SUCCEEDED',
        );
        // Its notification reached nobody: the subscriber has not heard of the end.
        expect(sub.pushes.at(-1)?.status).toBe('RUNNING');
        await admin.query(`alter database ${database} allow_connections true`);
        await sub.ended;
        expect(sub.pushes.at(-1)).toEqual({ status: 'SUCCEEDED', progress: 1 });
        // Listening again, on a new connection.
        const now = await listeners();
        expect(now).toHaveLength(1);
        expect(now[0].pid).not.toBe(listener.pid);
      } finally {
        await admin.query(`alter database ${database} allow_connections true`);
        await admin.end();
        await sub.dispose();
      }
    }, 20_000);
  });
}
