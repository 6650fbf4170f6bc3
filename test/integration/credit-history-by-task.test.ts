import type { FakeSite } from '../fakes/site.fake.js';
import type { GqlAnswer, Harness } from '../support/harness.js';
import { transcriptionWorld, type TranscriptionWorld } from '../support/world.js';
import { waitFor } from '../support/wait-for.js';
import { OPERATOR } from '../../src/modules/principal.js';
import {
  jobBody,
  type Connection,
  type CreditEntryNode,
  type JobBody,
  type ErrorBody,
  type PagedConnection,
  type TranscriptionBody,
} from '../support/bodies.js';

const ROWS = `query($first: Int, $after: String) { creditHistoryByTask(first: $first, after: $after) {
  edges { cursor node { id createdAt
    job { id operation status creditsCharged creditsHeld error { code } creditEntries { kind amount availableDelta heldDelta jobId } }
    entry { id kind amount availableDelta heldDelta jobId reason } } }
  pageInfo { hasNextPage endCursor } } }`;
type Entry = Omit<CreditEntryNode, 'createdAt'>;
type Row = {
  id: string;
  createdAt: string;
  job: {
    id: string;
    operation: string;
    status: string;
    creditsCharged: number;
    creditsHeld: number;
    error: { code: string } | null;
    creditEntries: Omit<Entry, 'id' | 'reason'>[];
  } | null;
  entry: Entry | null;
};
type Rows = { creditHistoryByTask: PagedConnection<Row> };

/** The holder's credit history read per task (creditHistoryByTask), over HTTP, after real tasks. */
describe('the credit history per task', () => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;
  beforeAll(async () => {
    world = await transcriptionWorld({
      media: [
        { path: '/talk.mp3', seconds: 75 },
        { path: '/clip.mp4', seconds: 2, video: true },
      ],
      pages: {
        '/watch': { title: 'Clip', video: { src: '/clip.mp4', type: 'video/mp4; codecs="avc1.42c01f, mp4a.40.2"' } },
        '/empty': { title: 'Nothing here', body: '<p>text only</p>' },
      },
    });
    ({ h, site } = world);
    // Media whose download never finishes: the job runs until it is canceled.
    site.endless('/endless.mp3', 'audio/mpeg');
  }, 60_000);
  afterAll(() => world?.close());

  const auth = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });
  const untilJob = async (key: string, id: string, done: (job: JobBody) => boolean) => {
    return waitFor(
      async () => {
        const job = jobBody(await h.request('GET', `/api/jobs/${id}`, auth(key)));
        if (!done(job)) throw new Error(`job ${id} is ${JSON.stringify(job)}`);
        return job;
      },
      { describe: `job ${id} to reach the expected state`, timeout: 15_000, interval: 100 },
    );
  };

  it('has one row per task with what it charged (nothing when it failed or was canceled), its entries one field away, and grants as their own rows', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const parsed = await h.rest('/api/parse', { url: `${site.origin}/watch` }, key);
    expect(parsed.statusCode).toBe(200);
    expect((await h.rest('/api/parse', { url: `${site.origin}/empty` }, key)).json<ErrorBody>().error.code).toBe('NO_MEDIA_FOUND');
    const transcribed = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3` }, key);
    expect(transcribed.json<TranscriptionBody>().credits).toEqual({ charged: 2, balance: 7 });
    expect((await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/gone.mp3` }, key)).json<ErrorBody>().error.code).toBe(
      'CONTENT_UNAVAILABLE',
    );
    const started = jobBody(await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/endless.mp3` }, key, { prefer: 'respond-async' }));
    await untilJob(key, started.id, (j) => j.status === 'RUNNING');
    expect(jobBody(await h.request('POST', `/api/jobs/${started.id}/cancel`, auth(key))).status).toBe('CANCELED');
    await h.services.ledger.grant(accountId, 3, 'goodwill');

    const res = await h.gql<Rows>(ROWS, { first: 20 }, key);
    expect(res.errors).toBeUndefined();
    const rows = res.data.creditHistoryByTask.edges.map((e) => e.node);
    const entry = (kind: string, amount: number, availableDelta: number, heldDelta: number, jobId: string | null) => ({
      kind,
      amount,
      availableDelta,
      heldDelta,
      jobId,
    });
    const task = (row: Row) => {
      const job = row.job!;
      expect(row.id).toBe(job.id);
      expect(row.entry).toBeNull();
      return [
        job.operation,
        job.status,
        job.creditsCharged,
        job.creditsHeld,
        job.error?.code ?? null,
        job.creditEntries.map((e) => [e.kind, e.amount]),
      ];
    };
    expect(rows).toHaveLength(7);
    expect(rows[0]).toMatchObject({ job: null, entry: { ...entry('GRANT', 3, 3, 0, null), reason: 'goodwill' } });
    expect(rows.slice(1, 6).map(task)).toEqual([
      [
        'TRANSCRIBE',
        'CANCELED',
        0,
        0,
        'CANCELED',
        [
          ['HOLD', 1],
          ['RELEASE', 1],
        ],
      ],
      [
        'TRANSCRIBE',
        'FAILED',
        0,
        0,
        'CONTENT_UNAVAILABLE',
        [
          ['HOLD', 1],
          ['RELEASE', 1],
        ],
      ],
      // The hold of the first minute, raised once the media's length was known, then captured whole.
      [
        'TRANSCRIBE',
        'SUCCEEDED',
        2,
        0,
        null,
        [
          ['HOLD', 1],
          ['HOLD', 1],
          ['CAPTURE', 2],
        ],
      ],
      [
        'PARSE',
        'FAILED',
        0,
        0,
        'NO_MEDIA_FOUND',
        [
          ['HOLD', 1],
          ['RELEASE', 1],
        ],
      ],
      [
        'PARSE',
        'SUCCEEDED',
        1,
        0,
        null,
        [
          ['HOLD', 1],
          ['CAPTURE', 1],
        ],
      ],
    ]);
    expect(rows[1].job?.id).toBe(started.id);
    const talk = rows[3].job!;
    expect(talk.id).toBe(transcribed.json<{ id: string }>().id);
    expect(talk.creditEntries).toEqual([
      entry('HOLD', 1, -1, 1, talk.id),
      entry('HOLD', 1, -1, 1, talk.id),
      entry('CAPTURE', 2, 0, -2, talk.id),
    ]);
    expect(rows[5].job?.id).toBe(parsed.json<{ id: string }>().id);
    expect(rows[6]).toMatchObject({ job: null, entry: { ...entry('GRANT', 10, 10, 0, null), reason: 'initial credits' } });
    expect(res.data.creditHistoryByTask.pageInfo.hasNextPage).toBe(false);

    // The rows account for the balance: what each task charged, what each other entry moved.
    const moved = rows.reduce((sum: number, r) => sum + (r.job ? -r.job.creditsCharged : r.entry!.availableDelta), 0);
    expect(await h.balance(accountId)).toEqual({ available: moved, held: 0 });
    expect(moved).toBe(10);
    // The entries themselves stay entry by entry.
    const all = await h.gql<{ creditHistory: Connection<{ id: string }> }>(
      `{ creditHistory(first: 100) { edges { node { id } } } }`,
      {},
      key,
    );
    expect(all.data.creditHistory.edges).toHaveLength(2 + 2 + 2 + 3 + 2 + 2);
  });

  it('pages without skipping or repeating a row, also when tasks and grants share one instant', async () => {
    const { key, accountId } = await h.account({ credits: 1 });
    // Four jobs and five grants written by one statement: one now() for all nine rows.
    await h.sql(
      `with j as (
         insert into job (id, account_id, operation, status, input, hold_amount, credits_charged, deadline_at, finished_at)
         select gen_random_uuid(), ?, 'PARSE', 'FAILED', jsonb_build_object('n', n), 0, 0, now(), now() from generate_series(1, 4) n
         returning id
       ), b as (update credit_balance set available = available + 5 where account_id = ?)
       insert into credit_entry (account_id, kind, amount, available_delta, held_delta, reason)
       select ?, 'GRANT', 1, 1, 0, 'grant ' || n from generate_series(1, 5) n`,
      [accountId, accountId, accountId],
    );
    const everything = (await h.gql<Rows>(ROWS, { first: 100 }, key)).data.creditHistoryByTask.edges.map((e) => e.node.id);
    expect(everything).toHaveLength(10);
    for (const first of [1, 2, 3]) {
      const seen: string[] = [];
      let after: string | null = null;
      for (let page = 0; page <= 10; page++) {
        const res: GqlAnswer<Rows> = await h.gql<Rows>(ROWS, { first, after }, key);
        expect(res.errors).toBeUndefined();
        seen.push(...res.data.creditHistoryByTask.edges.map((e) => e.node.id));
        if (!res.data.creditHistoryByTask.pageInfo.hasNextPage) break;
        after = res.data.creditHistoryByTask.pageInfo.endCursor;
      }
      expect(seen).toEqual(everything);
    }
  });

  it('shows only the caller’s own rows, needs the read scope, and refuses a cursor it did not make', async () => {
    const me = await h.account({ credits: 2 });
    const other = await h.account({ credits: 5 });
    await h.rest('/api/parse', { url: `${site.origin}/watch` }, other.key);
    const mine = await h.gql<Rows>(ROWS, {}, me.key);
    expect(mine.data.creditHistoryByTask.edges.map((e) => [e.node.entry?.kind, e.node.entry?.amount])).toEqual([['GRANT', 2]]);

    const parseOnly = (await h.services.apiKeys.create(OPERATOR, me.accountId, 'parse only', ['parse'])).key;
    expect((await h.gql<Rows>(ROWS, {}, parseOnly)).errors?.[0].extensions.code).toBe('FORBIDDEN');

    // A creditHistory cursor, a made-up one, a bad page size: INVALID_INPUT.
    const entryCursor = (
      await h.gql<{ creditHistory: { pageInfo: { endCursor: string } } }>(
        `{ creditHistory(first: 1) { pageInfo { endCursor } } }`,
        {},
        me.key,
      )
    ).data.creditHistory.pageInfo.endCursor;
    const forged = Buffer.from(`${new Date().toISOString()}|job:not-a-uuid`).toString('base64url');
    for (const variables of [{ after: entryCursor }, { after: forged }, { after: 'nonsense' }, { first: 0 }]) {
      const bad = await h.gql<Rows>(ROWS, variables, me.key);
      expect(bad.errors?.[0].extensions.code).toBe('INVALID_INPUT');
    }
  });
});
