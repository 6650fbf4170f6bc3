import { createClient } from 'graphql-ws';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { waitFor } from '../support/wait-for.js';
import { Cluster, gql, until } from './cluster-world.js';
import { send, type Reply } from '../support/send.js';
import type { ErrorBody } from '../support/bodies.js';

const PARSE = `mutation($i: ParseInput!) { parse(input: $i) { id credits { charged balance } } }`;
const START = `mutation($i: TranscribeInput!) { startTranscription(input: $i) { id status creditsHeld } }`;
const CANCEL = `mutation($id: ID!) { cancelJob(id: $id) { status creditsHeld creditsCharged } }`;
const JOB = `query($id: ID!) { job(id: $id) { status creditsHeld creditsCharged error { code } } }`;

const bearer = (key: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${key}`, ...extra });
/** What a parse or a waited-for transcription answers, as far as these tests read it (or the error body). */
type Charged = { id: string; credits: { charged: number; balance: number } } & Partial<ErrorBody>;
type StartedJob = { startTranscription: { id: string; status: string; creditsHeld: number } };
type JobState = { status: string; creditsHeld: number; creditsCharged: number };

const ok = <T>(r: Reply<T>): Exclude<Reply<T>, { lost: string }> => {
  if ('lost' in r) throw new Error(`lost: ${r.lost}`);
  return r;
};

/** One account's expectation, built from the answers its requests got. */
interface Expect {
  accountId: string;
  key: string;
  credits: number;
  /** Job id → what its answer (or, for queued jobs, its final state) says it was charged. */
  charged: Map<string, number>;
}

describe('two gateways and a worker on one PostgreSQL and one Redis', () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await Cluster.start();
  }, 180_000);
  afterAll(async () => {
    await c?.close();
  }, 60_000);

  /** Every account's ledger as its answers say, and the whole database's invariants. */
  async function checkLedger(accounts: Expect[]): Promise<void> {
    await c.settled(accounts.map((a) => a.accountId));
    for (const a of accounts) {
      const { rows: jobs } = await c.sql.query<{ id: string; status: string; charged: number }>(
        `select id, status, credits_charged::int as charged from job where account_id = $1`,
        [a.accountId],
      );
      const succeeded = new Map(jobs.filter((j) => j.status === 'SUCCEEDED').map((j) => [j.id, j.charged]));
      // Charged once: exactly the answered successes, each for what its answer said.
      expect(succeeded).toEqual(new Map([...a.charged].filter(([, n]) => n > 0)));
      expect(jobs.filter((j) => j.status !== 'SUCCEEDED').every((j) => j.charged === 0)).toBe(true);
      const spent = [...a.charged.values()].reduce((s, n) => s + n, 0);
      expect(await c.balance(a.accountId)).toEqual({ available: a.credits - spent, held: 0 });
    }
    expect(await c.ledgerProblems()).toEqual([]);
  }

  it('mixed load spread over both: every entry sums to its balance, nothing stays held, each answered request charged once', async () => {
    const accounts: Expect[] = [];
    for (let i = 0; i < 4; i++) accounts.push({ ...(await c.account(40)), credits: 40, charged: new Map() });
    const gateways = [c.a, c.b];
    const tasks: Promise<void>[] = [];
    let n = 0;
    const counts: Record<string, number> = {};
    const tally = (what: string) => void (counts[what] = (counts[what] ?? 0) + 1);
    for (let round = 0; round < 2; round++) {
      for (const acc of accounts) {
        const here = gateways[n++ % 2];
        const there = gateways[n % 2];
        tasks.push(
          (async () => {
            // A parse that succeeds (REST) and one whose page fails (GraphQL).
            const good = ok(await send<Charged>(here, 'POST', '/api/parse', bearer(acc.key), { url: `${c.site.origin}/ok` }));
            expect(good.status).toBe(200);
            acc.charged.set(good.json.id, good.json.credits.charged);
            tally('parse ok');
            const bad = ok(await gql(there, acc.key, PARSE, { i: { url: `${c.site.origin}/broken` } }));
            expect(bad.json.errors?.[0].extensions.code).toBe('PROVIDER_ERROR');
            tally('parse failed');
          })(),
          (async () => {
            // A transcription waited for, on the gateway that receives it.
            const t = ok(await send<Charged>(here, 'POST', '/api/transcribe', bearer(acc.key), { mediaUrl: `${c.site.origin}/m20.mp3` }));
            expect(t.status).toBe(200);
            acc.charged.set(t.json.id, t.json.credits.charged);
            tally('transcribe sync');
          })(),
          (async () => {
            // A queued one, worked by the worker process and followed on the other gateway.
            const s = ok(await gql<StartedJob>(here, acc.key, START, { i: { mediaUrl: `${c.site.origin}/m70.mp3` } }));
            const id = s.json.data.startTranscription.id;
            let job: { status: string; creditsCharged: number } = { status: 'QUEUED', creditsCharged: 0 };
            await until(
              'the queued job ends',
              async () => {
                job = ok(await gql<{ job: JobState }>(there, acc.key, JOB, { id })).json.data.job;
                return job.status === 'SUCCEEDED' || job.status === 'FAILED';
              },
              60_000,
              200,
            );
            expect(job).toMatchObject({ status: 'SUCCEEDED' });
            acc.charged.set(id, job.creditsCharged);
            tally('transcribe queued');
          })(),
          (async () => {
            // A queued one canceled through the other gateway: canceled (nothing charged) or already done (charged as it says).
            const s = ok(await gql<StartedJob>(here, acc.key, START, { i: { mediaUrl: `${c.site.origin}/m20.mp3` } }));
            const id = s.json.data.startTranscription.id;
            const canceled = ok(await gql<{ cancelJob: JobState }>(there, acc.key, CANCEL, { id })).json.data.cancelJob;
            expect(['CANCELED', 'SUCCEEDED']).toContain(canceled.status);
            if (canceled.status === 'SUCCEEDED') acc.charged.set(id, canceled.creditsCharged);
            tally(`cancel → ${canceled.status}`);
          })(),
        );
      }
    }
    // Grants meanwhile, by the operator CLI (one per account).
    for (const acc of accounts) {
      tasks.push(
        (async () => {
          const granted = await c.cli<{ granted: number }>('credits', 'grant', acc.accountId, '5', '--reason', 'cluster test');
          expect(granted.granted).toBe(5);
          acc.credits += 5;
          tally('grant');
        })(),
      );
    }
    await Promise.all(tasks);
    process.stdout.write(`[cluster mixed load] ${JSON.stringify(counts)}\n`);
    await checkLedger(accounts);
  }, 180_000);

  it('a key revoked through A is refused by B on the very next request; a membership ended by the CLI stops spending on both', async () => {
    const acc = await c.account(20);
    const second = ok(
      await gql<{ createApiKey: { key: string; apiKey: { id: string } } }>(
        c.a,
        acc.key,
        `mutation { createApiKey(name: "second") { key apiKey { id } } }`,
      ),
    ).json.data.createApiKey;
    // B has seen and cached the second key before it is revoked.
    const before = ok(await send(c.b, 'POST', '/api/parse', bearer(second.key), { url: `${c.site.origin}/ok` }));
    expect(before.status).toBe(200);
    const revoked = ok(
      await gql<{ revokeApiKey: { revokedAt: string | null } }>(
        c.a,
        acc.key,
        `mutation($id: ID!) { revokeApiKey(id: $id) { revokedAt } }`,
        {
          id: second.apiKey.id,
        },
      ),
    );
    expect(revoked.json.data.revokeApiKey.revokedAt).toEqual(expect.any(String));
    const after = ok(await send<ErrorBody>(c.b, 'POST', '/api/parse', bearer(second.key), { url: `${c.site.origin}/ok` }));
    expect([after.status, after.json.error.code]).toEqual([401, 'UNAUTHENTICATED']);
    const afterGql = ok(await gql(c.b, second.key, `{ me { id } }`));
    expect(afterGql.json.errors?.[0].extensions.code).toBe('UNAUTHENTICATED');

    // Both gateways spend for the member, then the CLI ends the membership.
    for (const g of [c.a, c.b])
      expect(ok(await send(g, 'POST', '/api/parse', bearer(acc.key), { url: `${c.site.origin}/ok` })).status).toBe(200);
    await c.cli('membership', 'cancel', acc.accountId);
    const spent = await c.balance(acc.accountId);
    for (const g of [c.a, c.b]) {
      const refused = ok(await send<ErrorBody>(g, 'POST', '/api/parse', bearer(acc.key), { url: `${c.site.origin}/ok` }));
      expect([refused.status, refused.json.error.code]).toEqual([403, 'MEMBERSHIP_REQUIRED']);
      const refusedGql = ok(await gql(g, acc.key, START, { i: { mediaUrl: `${c.site.origin}/m20.mp3` } }));
      expect(refusedGql.json.errors?.[0].extensions.code).toBe('MEMBERSHIP_REQUIRED');
    }
    expect(spent).toEqual({ available: 17, held: 0 });
    expect(await c.balance(acc.accountId)).toEqual(spent);
    expect(await c.ledgerProblems()).toEqual([]);
  }, 60_000);

  it('a transcription started through A, followed on B and canceled through B: the worker stops within 200 ms and nothing is charged', async () => {
    const acc = await c.account(5);
    c.stallProvider = true;
    const client = createClient({
      url: `${c.b.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { Authorization: `Bearer ${acc.key}` },
      retryAttempts: 0,
    });
    try {
      const before = c.openai.requests.length;
      const started = ok(await gql<StartedJob>(c.a, acc.key, START, { i: { mediaUrl: `${c.site.origin}/m70.mp3` } })).json.data
        .startTranscription;
      expect(started).toMatchObject({ status: 'QUEUED', creditsHeld: expect.any(Number) });
      const pushes: { status: string }[] = [];
      const ended = new Promise<void>((resolve, reject) =>
        client.subscribe(
          { query: `subscription($id: ID!) { jobUpdated(id: $id) { status creditsHeld creditsCharged } }`, variables: { id: started.id } },
          { next: (m) => void pushes.push((m.data as { jobUpdated: { status: string } }).jobUpdated), error: reject, complete: resolve },
        ),
      );
      // The worker process has sent the media to the provider, which stalls.
      await until('the provider request', () => c.openai.requests.length > before, 30_000);
      const request = c.openai.requests[before];
      await until('B pushes RUNNING', () => pushes.some((p) => p.status === 'RUNNING'), 10_000);

      const sentAt = performance.now();
      const canceled = ok(await gql<{ cancelJob: JobState }>(c.b, acc.key, CANCEL, { id: started.id })).json.data.cancelJob;
      expect(canceled).toEqual({ status: 'CANCELED', creditsHeld: 0, creditsCharged: 0 });
      await until('the provider request to close', () => request.closedAt !== null, 5_000, 2);
      const ms = request.closedAt! - sentAt;
      process.stdout.write(`[cluster cancel] the worker's provider request closed ${ms.toFixed(1)} ms after the cancel was sent to B\n`);
      expect(ms).toBeLessThan(200);

      await ended;
      expect(pushes.at(-1)).toEqual({ status: 'CANCELED', creditsHeld: 0, creditsCharged: 0 });
      expect(await c.balance(acc.accountId)).toEqual({ available: 5, held: 0 });
      expect(await c.ledgerProblems()).toEqual([]);
    } finally {
      c.stallProvider = false;
      await client.dispose();
    }
  }, 60_000);

  it('SIGKILL of A under load, each unanswered request retried on B with its Idempotency-Key: answered once, charged once, A’s holds settled by the sweep', async () => {
    const acc = await c.account(100);
    const [a, b] = c.gateways;
    type Outcome = { key: string; via: 'A' | 'B'; retries: number; status: number; id?: string; charged?: number; code?: string };
    const outcomes: Outcome[] = [];
    const inFlightOnA = () => c.site.hits.filter((h) => h === 'GET /slow').length;
    const hitsBefore = inFlightOnA();
    const request = async (i: number): Promise<void> => {
      const key = `cluster-kill-${i}`;
      const via: 'A' | 'B' = i % 2 ? 'B' : 'A';
      let answer: Reply<Charged> = await send<Charged>(
        via === 'A' ? a.url : b.url,
        'POST',
        '/api/parse',
        bearer(acc.key, { 'idempotency-key': key }),
        {
          url: `${c.site.origin}/slow`,
        },
      );
      let retries = 0;
      // Unanswered (A died): retry on B; 409 while A's dead job still holds the key, until the sweep ends it.
      if ('lost' in answer) {
        answer = await waitFor(
          async () => {
            retries++;
            const again = await send<Charged>(b.url, 'POST', '/api/parse', bearer(acc.key, { 'idempotency-key': key }), {
              url: `${c.site.origin}/slow`,
            });
            if ('lost' in again) throw new Error('B did not answer');
            if (again.status === 409) throw new Error('409: the dead job still holds the key');
            return again;
          },
          { describe: `${key} answered on B`, timeout: 90_000, interval: 200 },
        );
      }
      const r = ok(answer);
      outcomes.push({ key, via, retries, status: r.status, id: r.json.id, charged: r.json.credits?.charged, code: r.json.error?.code });
    };
    const load = Array.from({ length: 40 }, (_, i) => request(i));
    // Killed while A's pages are being fetched: requests with holds placed and unanswered.
    await until('requests in flight on A', () => inFlightOnA() - hitsBefore >= 10, 20_000, 5);
    const exit = await a.kill();
    expect(exit.signal).toBe('SIGKILL');
    await Promise.all(load);

    // Every request answered exactly once, with a success charged one credit.
    expect(outcomes).toHaveLength(40);
    expect(new Set(outcomes.map((o) => o.key)).size).toBe(40);
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    expect(outcomes.every((o) => o.charged === 1)).toBe(true);
    const retried = outcomes.filter((o) => o.retries > 0);
    process.stdout.write(
      `[cluster sigkill] ${retried.length} requests lost with A retried on B (${retried.reduce((n, o) => n + o.retries, 0)} retries)\n`,
    );
    expect(retried.length).toBeGreaterThan(0);
    expect(retried.every((o) => o.via === 'A')).toBe(true);

    // A's open holds were settled by the sweep (B's), and each key charged once.
    await c.settled([acc.accountId]);
    const { rows } = await c.sql.query<{ id: string; idempotency_key: string; status: string; charged: number }>(
      `select id, idempotency_key, status, credits_charged::int as charged from job where account_id = $1`,
      [acc.accountId],
    );
    const succeeded = rows.filter((r) => r.status === 'SUCCEEDED');
    expect(succeeded.map((r) => r.idempotency_key).sort()).toEqual(outcomes.map((o) => o.key).sort());
    expect(new Set(succeeded.map((r) => r.idempotency_key)).size).toBe(succeeded.length);
    expect(rows.filter((r) => r.status !== 'SUCCEEDED').every((r) => r.charged === 0)).toBe(true);
    expect(new Set(outcomes.map((o) => o.id))).toEqual(new Set(succeeded.map((r) => r.id)));
    expect(await c.balance(acc.accountId)).toEqual({ available: 60, held: 0 });
    expect(await c.ledgerProblems()).toEqual([]);
    // A again, for whatever runs after.
    c.gateways[0] = await c.startGateway();
  }, 120_000);
});
