import { startFakeOpenAi } from '../fakes/openai.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, transcribingHarness, type Harness } from '../support/harness.js';
import { makeMedia } from '../support/media.js';
import { waitFor } from '../support/wait-for.js';
import { follow, JOB_UPDATED, keyClient, metricValue, type Followed, type JobPush, type TestClient } from '../support/ws-client.js';
import { OPERATOR } from '../../src/modules/principal.js';

/**
 * What following a job costs the database: one watcher per job per instance, shared by all its
 * subscribers and woken by the database's notifications, so a change is one read however many
 * follow it; and an account runs at most SUBSCRIPTIONS_PER_ACCOUNT subscriptions at once.
 */

type Fake = Awaited<ReturnType<typeof startFakeOpenAi>>;

const until = <T>(what: string, value: () => T | Promise<T>, ms = 10_000) => waitFor(value, { describe: what, timeout: ms, interval: 5 });

describe('jobUpdated subscribers share one watcher per job', () => {
  let h: Harness;
  let site: FakeSite;
  let openai: Fake;
  beforeAll(async () => {
    site = await startFakeSite();
    site.file('/talk.mp3', makeMedia({ seconds: 75 }), 'audio/mpeg');
    // The provider never answers in time: the job stays RUNNING while the test moves it.
    openai = await startFakeOpenAi({ respond: () => ({ status: 500, body: {}, delayMs: 60_000 }) });
    h = await transcribingHarness(site, openai, { env: { SUBSCRIPTIONS_PER_ACCOUNT: '4' } });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await site?.close();
    await openai?.close();
  });

  /** A transcription stalled at its provider (RUNNING), started by `key`. */
  async function runningTranscription(key: string): Promise<string> {
    const before = openai.requests.length;
    const started = await h.gql<{ startTranscription: { id: string } }>(
      `mutation($i: TranscribeInput!) { startTranscription(input: $i) { id } }`,
      { i: { mediaUrl: `${site.origin}/talk.mp3` } },
      key,
    );
    await until('the provider request', () => openai.requests.length > before);
    return started.data.startTranscription.id;
  }

  it('30 subscribers on one job, over three sockets: one read of the job per change, and no reads while it does not change', async () => {
    const sockets: TestClient[] = [];
    // The cap is the harness's 4; this account's subscriptions are counted by another harness on the same database.
    const wide = await createHarness({ SUBSCRIPTIONS_PER_ACCOUNT: '50' }, undefined, { shareDatabaseOf: h });
    try {
      const { key, accountId } = await h.account({ credits: 5 });
      const id = await runningTranscription(key);
      const wideMetrics = async () => (await wide.request('GET', '/metrics')).body;
      const subs: Followed<JobPush>[] = [];
      for (let s = 0; s < 3; s++) {
        const c = keyClient(wide, key);
        sockets.push(c);
        for (let i = 0; i < 10; i++) subs.push(follow(c, JOB_UPDATED, { id }));
      }
      await until('every subscriber’s first push', () => subs.every((s) => s.pushes.length === 1));
      expect(new Set(subs.map((s) => s.pushes[0].status))).toEqual(new Set(['RUNNING']));
      const first = await wideMetrics();
      expect(metricValue(first, 'mediagate_job_watchers')).toBe(1);
      expect(metricValue(first, 'mediagate_job_subscriptions')).toBe(30);
      // The 30 first pushes came from one read.
      expect(metricValue(first, 'mediagate_job_watch_reads_total')).toBe(1);

      for (const [n, progress] of [0.25, 0.5, 0.75].entries()) {
        await h.sql(`update job set progress = ? where id = ?`, [progress, id]);
        await until(`every subscriber to hear progress ${progress}`, () => subs.every((s) => s.pushes.at(-1)?.progress === progress));
        expect(metricValue(await wideMetrics(), 'mediagate_job_watch_reads_total')).toBe(2 + n);
      }
      // A write that changes nothing a watcher shows is not notified: no read (the next change is read once).
      await h.sql(`update job set progress = progress, provider = provider where id = ?`, [id]);
      await h.sql(`update job set progress = 0.8 where id = ?`, [id]);
      await until('every subscriber to hear progress 0.8', () => subs.every((s) => s.pushes.at(-1)?.progress === 0.8));
      expect(metricValue(await wideMetrics(), 'mediagate_job_watch_reads_total')).toBe(5);
      expect(subs.every((s) => s.pushes.length === 5)).toBe(true);

      // Ended: every subscription completes with the final state, and the watcher is gone.
      const canceled = await h.gql<{ cancelJob: { status: string } }>(`mutation($id: ID!) { cancelJob(id: $id) { status } }`, { id }, key);
      expect(canceled.data.cancelJob.status).toBe('CANCELED');
      await until('every subscription to complete', () => subs.every((s) => s.end !== null));
      expect(subs.every((s) => s.pushes.at(-1)?.status === 'CANCELED' && 'complete' in s.end!)).toBe(true);
      const last = await wideMetrics();
      expect(metricValue(last, 'mediagate_job_watchers')).toBe(0);
      expect(metricValue(last, 'mediagate_job_subscriptions')).toBe(0);
      const reads = metricValue(last, 'mediagate_job_watch_reads_total');
      process.stdout.write(`[subscription-watchers] 30 subscribers, 4 progress changes and a cancel: ${reads} reads of the job\n`);
      expect(reads).toBeLessThanOrEqual(7);
      expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
    } finally {
      await Promise.all(sockets.map((c) => c.dispose()));
      await wide.close();
    }
  });

  it('runs at most SUBSCRIPTIONS_PER_ACCOUNT subscriptions for one account, over all its sockets and keys; one more is refused RATE_LIMITED until one ends', async () => {
    const a = await h.account({ credits: 5 });
    const secondKey = (await h.services.apiKeys.create(OPERATOR, a.accountId, 'second')).key;
    const other = await h.account({ credits: 5 });
    const id = await runningTranscription(a.key);
    const otherId = await runningTranscription(other.key);
    const one = keyClient(h, a.key);
    const two = keyClient(h, secondKey);
    const third = keyClient(h, other.key);
    try {
      const subs = [follow(one, JOB_UPDATED, { id }), follow(one, JOB_UPDATED, { id }), follow(two, JOB_UPDATED, { id })];
      subs.push(follow(two, JOB_UPDATED, { id }));
      await until('four subscriptions running', () => subs.every((s) => s.pushes.length === 1));
      const refused = follow(two, JOB_UPDATED, { id });
      await until('the fifth to be refused', () => refused.end);
      expect(refused.end).toEqual({
        codes: ['RATE_LIMITED'],
        messages: ['At most 4 subscriptions run at once for one account; complete one first.'],
      });
      // Another account has its own count.
      const theirs = follow(third, JOB_UPDATED, { id: otherId });
      await until('another account’s subscription', () => theirs.pushes.length === 1);
      // One ends: another may start.
      subs[0].stop();
      await until('a free place', async () => {
        const again = follow(one, JOB_UPDATED, { id });
        await until('an answer', () => again.pushes.length === 1 || again.end);
        if (again.pushes.length === 1) return true;
        return false;
      });
    } finally {
      await Promise.all([one, two, third].map((c) => c.dispose()));
      await h.gql(`mutation($id: ID!) { cancelJob(id: $id) { status } }`, { id }, a.key);
      await h.gql(`mutation($id: ID!) { cancelJob(id: $id) { status } }`, { id: otherId }, other.key);
    }
  });
});
