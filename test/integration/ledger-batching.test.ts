import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, type Harness } from '../support/harness.js';
import { changeUnheard, heardAccount, parseThrough, statementsOf, type DoorAnswer } from '../support/parse-doors.js';
import { TEST_DATABASES } from '../support/test-database.js';

const DATABASES = TEST_DATABASES;
/** Unbatched, and batched with a window wide enough that a burst of requests surely shares statements. */
const MODES = [
  ['unbatched', '0'],
  ['batched', '25'],
] as const;

const doors = ['rest', 'graphql'] as const;
const count = (answers: DoorAnswer[], status: number) => answers.filter((a) => a.status === status).length;

/**
 * Holds and captures applied one statement per request, or a batch per statement (LEDGER_BATCH_WINDOW_MS):
 * the same answers, request by request, and the same ledger.
 */
describe.each(DATABASES.flatMap((database) => MODES.map(([mode, windowMs]) => [mode, windowMs, database] as const)))(
  'ledger writes %s (window %s ms, %s database)',
  (mode, windowMs, database) => {
    let h: Harness;
    let site: FakeSite;
    let page: string;
    /** The page, answered only once `together` requests for it are waiting: every hold is placed before any capture. */
    let gatedPage: string;
    beforeAll(async () => {
      site = await startFakeSite();
      const html = `<html><head><meta property="og:video" content="${site.origin}/v.mp4"><meta property="og:video:type" content="video/mp4"></head></html>`;
      site.page('/v', html);
      page = `${site.origin}/v`;
      const waiting: ServerResponse[] = [];
      const together = 5;
      site.route('/gated', (_req, res) => {
        waiting.push(res);
        if (waiting.length >= together) for (const r of waiting.splice(0)) r.writeHead(200, { 'content-type': 'text/html' }).end(html);
      });
      gatedPage = `${site.origin}/gated`;
      h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort, LEDGER_BATCH_WINDOW_MS: windowMs }, undefined, { database });
    }, 60_000);
    afterAll(async () => {
      await h?.close();
      await site?.close();
    });

    const expectLedger = async (accountId: string, balance: { available: number; held: number }, jobs: number) => {
      expect(await h.balance(accountId)).toEqual(balance);
      expect(await h.ledgerSums(accountId)).toEqual(balance);
      expect((await h.repositories.jobs.list(accountId, 100, null)).edges).toHaveLength(jobs);
    };

    it('lets exactly k of many parallel parses through for k credits, on both doors; the rest get 402 with the numbers', async () => {
      const { key, accountId } = await h.account({ credits: 5 });
      // The five that are let through fetch the page together, so each capture finds all five held.
      const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => parseThrough(doors[i % 2], h.url, key, gatedPage)));
      expect(count(answers, 200)).toBe(5);
      expect(count(answers, 402)).toBe(20);
      for (const refused of answers.filter((a) => a.status === 402)) {
        expect(refused).toMatchObject({ code: 'INSUFFICIENT_CREDITS', details: { required: 1, available: 0 } });
      }
      for (const ok of answers.filter((a) => a.status === 200)) expect(ok.credits).toEqual({ charged: 1, balance: 0 });
      await expectLedger(accountId, { available: 0, held: 0 }, 5);
    });

    it('gives each request of a burst over several accounts its own answer: taken, short of credits, or revoked', async () => {
      const rich = await h.account({ credits: 10 });
      const poor = await h.account({ credits: 3 });
      const broke = await h.account({ credits: 0 });
      const revoked = await heardAccount(h, { credits: 5 });
      // This instance has the key cached, and never hears that it is revoked: the hold itself must refuse it.
      expect((await h.gql<{ me: { id: string } }>(`{ me { id } }`, {}, revoked.key)).data.me.id).toBe(revoked.accountId);
      await changeUnheard(h, `update api_key set revoked_at = now() where id = $1`, [revoked.keyId]);

      const plan = [
        ...Array.from({ length: 4 }, () => rich),
        ...Array.from({ length: 6 }, () => poor),
        ...Array.from({ length: 2 }, () => broke),
        ...Array.from({ length: 3 }, () => revoked),
      ].sort(() => Math.random() - 0.5);
      const answers = await Promise.all(plan.map((who, i) => parseThrough(doors[i % 2], h.url, who.key, page).then((a) => ({ who, a }))));
      const of = (who: typeof rich) => answers.filter((x) => x.who === who).map((x) => x.a);

      expect(of(rich).map((a) => a.status)).toEqual([200, 200, 200, 200]);
      for (const a of of(rich)) expect(a.credits!.balance).toBeGreaterThanOrEqual(6);
      expect(count(of(poor), 200)).toBe(3);
      expect(of(poor).filter((a) => a.status !== 200)).toEqual(
        Array.from({ length: 3 }, () => ({ status: 402, code: 'INSUFFICIENT_CREDITS', details: { required: 1, available: 0 } })),
      );
      expect(of(broke)).toEqual(
        Array.from({ length: 2 }, () => ({ status: 402, code: 'INSUFFICIENT_CREDITS', details: { required: 1, available: 0 } })),
      );
      expect(of(revoked).map((a) => [a.status, a.code])).toEqual(Array.from({ length: 3 }, () => [401, 'UNAUTHENTICATED']));

      await expectLedger(rich.accountId, { available: 6, held: 0 }, 4);
      await expectLedger(poor.accountId, { available: 0, held: 0 }, 3);
      await expectLedger(broke.accountId, { available: 0, held: 0 }, 0);
      await expectLedger(revoked.accountId, { available: 5, held: 0 }, 0);
      // Refused once, the key is forgotten here too: even reading is refused now.
      expect((await h.gql(`{ me { id } }`, {}, revoked.key)).errors?.[0].extensions.code).toBe('UNAUTHENTICATED');

      const holds = await statementsOf(h, [rich.accountId, poor.accountId], 'HOLD');
      const captures = await statementsOf(h, [rich.accountId, poor.accountId], 'CAPTURE');
      expect(holds.entries).toBe(7);
      expect(captures.entries).toBe(7);
      if (mode === 'batched') {
        // Seven holds that arrived together were written by fewer statements than seven.
        expect(holds.statements).toBeLessThan(7);
      } else {
        expect(holds.statements).toBe(7);
        expect(captures.statements).toBe(7);
      }
    });

    it('keeps a twin request with the same idempotency key to itself while the rest of its batch proceeds', async () => {
      const twin = await h.account({ credits: 5 });
      const other = await h.account({ credits: 5 });
      const answers = await Promise.all([
        parseThrough('rest', h.url, twin.key, page, { 'idempotency-key': 'twin-1' }),
        parseThrough('rest', h.url, twin.key, page, { 'idempotency-key': 'twin-1' }),
        ...Array.from({ length: 3 }, (_, i) => parseThrough(doors[i % 2], h.url, other.key, page)),
      ]);
      // The twin that lost the race replays the winner, or is told it is still running.
      expect([
        [200, 200],
        [200, 409],
      ]).toContainEqual([answers[0].status, answers[1].status].sort());
      expect(answers.slice(2).map((a) => a.status)).toEqual([200, 200, 200]);
      await expectLedger(twin.accountId, { available: 4, held: 0 }, 1);
      await expectLedger(other.accountId, { available: 2, held: 0 }, 3);
    });

    it('takes the members of one account in arrival order while they fit, and gives a smaller one behind a refused one its own chance', async () => {
      const { accountId, keyId } = await h.account({ credits: 6 });
      const open = (amount: number) =>
        h.services.tasks
          .openJob({
            jobId: randomUUID(),
            accountId,
            apiKeyId: keyId,
            operation: 'TRANSCRIBE',
            input: {},
            amount,
            deadlineAt: new Date(Date.now() + 60_000),
          })
          .then(
            (r) => ({ balance: r.balance }),
            (err) => ({ code: err.code, details: err.details }),
          );
      // Handed over in the same tick: batched, the first goes at once (nothing is in flight) and the
      // other three wait for it as one batch; unbatched, four statements race.
      const [one, three, four, two] = await Promise.all([open(1), open(3), open(4), open(2)]);
      if (mode === 'batched') {
        expect(one).toEqual({ balance: 5 });
        expect(three).toEqual({ balance: 2 });
        expect(four).toEqual({ code: 'INSUFFICIENT_CREDITS', details: { required: 4, available: 2 } });
        expect(two).toEqual({ balance: 0 });
        expect(await h.balance(accountId)).toEqual({ available: 0, held: 6 });
      } else {
        const taken = [one, three, four, two].filter((r) => 'balance' in r).length;
        expect(taken).toBeGreaterThanOrEqual(2);
      }
      expect(await h.ledgerSums(accountId)).toEqual(await h.balance(accountId));
    });

    it('keeps a member the database refuses to itself: the others of its batch are written', async () => {
      const a = await h.account({ credits: 5 });
      const b = await h.account({ credits: 5 });
      const jobId = randomUUID();
      const open = (accountId: string, id: string) =>
        h.services.tasks
          .openJob({
            jobId: id,
            accountId,
            apiKeyId: null,
            operation: 'PARSE',
            input: {},
            amount: 1,
            deadlineAt: new Date(Date.now() + 60_000),
          })
          .then(
            () => 'held',
            (err) => (err.code === '23505' ? 'duplicate' : String(err)),
          );
      // The same job id twice: whichever comes second breaks a batch statement as a whole.
      const answers = await Promise.all([open(a.accountId, jobId), open(a.accountId, jobId), open(b.accountId, randomUUID())]);
      expect(answers.slice(0, 2).sort()).toEqual(['duplicate', 'held']);
      expect(answers[2]).toBe('held');
      for (const { accountId } of [a, b]) {
        expect(await h.balance(accountId)).toEqual({ available: 4, held: 1 });
        expect(await h.ledgerSums(accountId)).toEqual({ available: 4, held: 1 });
      }
    });
  },
);
