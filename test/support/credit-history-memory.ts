import { CreditHistoryRepository } from '../../src/modules/credits/credit-history.repository.js';
import http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';
import { jest } from '@jest/globals';
import pg from 'pg';
import { createHarness, type Harness } from './harness.js';
import { waitFor } from './wait-for.js';

/** The header row of the credit history CSV. */
export const CSV_HEADER = 'id,created_at,account_id,kind,amount,available_delta,held_delta,job_id,operation,reason';

/** A full garbage collection on demand (`--expose-gc` where jest was not started with it). */
function collector(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

/** When the first of the history's rows was written (the insert below); each next one a millisecond later. */
const OLDEST = '2026-01-01T00:00:00.000Z';

/**
 * A long history streams in bounded memory. The server runs in this process, so its resident size
 * is sampled here every 100 ms while a client (also here, reading with node:http and counting line
 * feeds, so it holds nothing) downloads a history of `ROWS` rows: 1,000,000 in `npm run test:long`
 * (credit-history-csv.long.test.ts), on PGlite and PostgreSQL alike (about 25 s on PGlite here,
 * 15 s on PostgreSQL, the insert included); fewer in `npm test` (credit-history-csv.test.ts).
 *
 * Measured here with this test (RSS growth over the download, 1,000,000 rows, PGlite / PostgreSQL):
 * - this export: +2 MB / +11 MB;
 * - every row loaded first, then written (the same compact rows, no entities): +323 MB / +584 MB;
 * - MikroORM `find` of all entries (a naive findAll), then written: +2.9 GB / +3.0 GB.
 * Without the once-a-second full collection, csv-stringify's allocation rate lets V8 grow its heap
 * spaces by 150-400 MB of garbage before it collects, whatever the number of rows, which would hide
 * the difference; the collection keeps what is measured to what the process holds.
 */
export function describeExportMemory(ROWS: number): void {
  describe('GET /api/credit-history.csv: memory', () => {
    const MAX_RSS_GROWTH_MB = 120;
    /** A full collection every this many samples (once a second). */
    const GC_EVERY = 10;
    let h: Harness;
    let account: { accountId: string; key: string };
    let oldestId: string;
    beforeAll(
      async () => {
        h = await createHarness();
        account = await h.account({ credits: 0 });
        const db = new pg.Client({ connectionString: h.clientUrl });
        await db.connect();
        try {
          // Microseconds apart: a millisecond holds a thousand rows, which paging by a JS Date would lose.
          await db.query(
            `insert into credit_entry (account_id, kind, amount, available_delta, held_delta, reason, created_at)
           select $1, 'ADJUST', 1, 1, 0, 'bulk ' || g, timestamptz '2026-01-01T00:00:00Z' + (g - 1) * interval '1 millisecond'
             from generate_series(1, $2::int) g`,
            [account.accountId, ROWS],
          );
          oldestId = (
            await db.query<{ min: string }>(`select min(id)::text as min from credit_entry where account_id = $1`, [account.accountId])
          ).rows[0].min;
        } finally {
          await db.end();
        }
      },
      Math.max(120_000, ROWS * 0.3),
    ); // the insert takes longer the more rows there are
    afterAll(() => h.close());

    /** Downloads a CSV, counting line feeds; returns the count, the first and the last line. */
    function download(
      path: string,
      key: string,
      signal?: AbortSignal,
    ): Promise<{ status: number; lines: number; first: string; last: string }> {
      return new Promise((resolve, reject) => {
        http
          .get(`${h.url}${path}`, { headers: { authorization: `Bearer ${key}` }, signal }, (res) => {
            let lines = 0;
            let first = '';
            let tail = Buffer.alloc(0);
            res.on('data', (chunk: Buffer) => {
              if (!first) first = chunk.toString('utf8', 0, Math.max(0, chunk.indexOf(10)));
              for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
              tail = Buffer.concat([tail, chunk.subarray(-400)]).subarray(-400);
            });
            res.on('end', () => {
              const text = tail.toString('utf8').trimEnd();
              resolve({ status: res.statusCode ?? 0, lines, first, last: text.slice(text.lastIndexOf('\n') + 1) });
            });
            res.on('error', reject);
          })
          .on('error', reject);
      });
    }

    it(`streams ${ROWS.toLocaleString('en')} rows with the resident size growing by less than ${MAX_RSS_GROWTH_MB} MB`, async () => {
      const a = account;
      // Warm up (code compiled, pools and heap spaces sized as in steady state) on a slice of the history.
      const warm = await download(`/api/credit-history.csv?from=${new Date(Date.parse(OLDEST) + ROWS * 0.9).toISOString()}`, a.key);
      expect(warm.lines).toBe(ROWS / 10 + 1);

      const gc = collector();
      gc();
      const start = process.memoryUsage().rss;
      let peak = start;
      let samples = 0;
      // Past the bound there is no point reading on (a buffered export would take minutes here).
      const overBound = new AbortController();
      const sampler = setInterval(() => {
        if (++samples % GC_EVERY === 0) gc();
        peak = Math.max(peak, process.memoryUsage().rss);
        if (peak - start > MAX_RSS_GROWTH_MB * 2 ** 20) overBound.abort();
      }, 100);
      const began = Date.now();
      let result: Awaited<ReturnType<typeof download>> | undefined;
      let failure: unknown;
      try {
        result = await download('/api/credit-history.csv', a.key, overBound.signal);
      } catch (err) {
        failure = err;
      } finally {
        clearInterval(sampler);
      }
      peak = Math.max(peak, process.memoryUsage().rss);
      const growthMb = (peak - start) / 2 ** 20;
      // Shown with the test results: the figure the bound is checked against.
      console.info(
        `credit-history.csv: ${ROWS} rows in ${Date.now() - began} ms, ${samples} samples; ` +
          `RSS ${Math.round(start / 2 ** 20)} MB → peak ${Math.round(peak / 2 ** 20)} MB (+${growthMb.toFixed(0)} MB)`,
      );
      expect(growthMb).toBeLessThan(MAX_RSS_GROWTH_MB);
      if (failure) throw failure;
      if (!result) throw new Error('no response');

      expect(result.status).toBe(200);
      expect(result.lines).toBe(ROWS + 1);
      expect(result.first).toBe(CSV_HEADER);
      // Newest first: the last row written is the first inserted.
      expect(result.last.split(',').slice(0, 4)).toEqual([oldestId, OLDEST, a.accountId, 'ADJUST']);
    }, 120_000);

    it('stops reading the database when the client goes away', async () => {
      let batches = 0;
      let closed = false;
      let readToTheEnd = false;
      // The service's own repository: every instance reads through the prototype.
      const read = CreditHistoryRepository.prototype.batches;
      const spy = jest.spyOn(CreditHistoryRepository.prototype, 'batches').mockImplementation(async function* (
        this: CreditHistoryRepository,
        ...args: Parameters<typeof read>
      ) {
        try {
          for await (const batch of read.apply(this, args)) {
            batches++;
            yield batch;
          }
          readToTheEnd = true;
        } finally {
          closed = true;
        }
      });
      try {
        await new Promise<void>((resolve, reject) => {
          const req = http.get(`${h.url}/api/credit-history.csv`, { headers: { authorization: `Bearer ${account.key}` } }, (res) => {
            res.once('data', () => {
              req.destroy();
              resolve();
            });
          });
          req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
        });
        // The export gives its reader back early (the generator returned, not read to its end) ...
        await waitFor(() => closed, { describe: 'the export to stop reading the database', timeout: 5_000 });
        expect(readToTheEnd).toBe(false);
        const afterClose = batches;
        // ... and reads nothing more while the server goes on serving.
        expect((await h.request('GET', '/healthz')).statusCode).toBe(200);
        expect(batches).toBe(afterClose);
        expect(batches).toBeLessThan(ROWS / 1000 / 10);
      } finally {
        spy.mockRestore();
      }
    });
  });
}
