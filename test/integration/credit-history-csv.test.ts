import { CreditHistoryRepository } from '../../src/modules/credits/credit-history.repository.js';
import { jest } from '@jest/globals';
import { parse } from 'csv-parse/sync';
import pg from 'pg';
import { CSV_HEADER as HEADER, describeExportMemory } from '../support/credit-history-memory.js';
import { createHarness, type GqlAnswer, type Harness } from '../support/harness.js';
import { factories } from '../support/factories.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { CreditEntryNode, ErrorBody, PagedConnection } from '../support/bodies.js';

const COLUMNS = HEADER.split(',');

/** The CSV's data rows as objects keyed by the header. */
function csvRecords(text: string): Record<string, string>[] {
  // RFC 4180 as csv-stringify writes it (quoted fields may hold commas, doubled quotes and newlines),
  // every record as wide as the header.
  const [header, ...rows] = parse(text, { record_delimiter: '\n' }) as string[][];
  expect(header).toEqual(COLUMNS);
  return rows.map((r) => Object.fromEntries(COLUMNS.map((c, i) => [c, r[i]])));
}

const HISTORY = `query($a: ID, $from: DateTime, $to: DateTime, $kinds: [CreditEntryKind!], $after: String) {
  creditHistory(accountId: $a, from: $from, to: $to, kinds: $kinds, first: 100, after: $after) {
    edges { node { id kind amount availableDelta heldDelta jobId reason createdAt } }
    pageInfo { hasNextPage endCursor } } }`;

describe('GET /api/credit-history.csv', () => {
  let h: Harness;
  let db: pg.Client;
  beforeAll(async () => {
    h = await createHarness();
    db = new pg.Client({ connectionString: h.clientUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db.end();
    await h.close();
  });

  const get = (path: string, key?: string | null) =>
    h.request('GET', path, { headers: key ? { authorization: `Bearer ${key}` } : undefined });

  /** Every creditHistory entry for these filters, through GraphQL, as the CSV should show it. */
  async function viaGraphql(key: string, vars: Record<string, unknown>): Promise<Record<string, string>[]> {
    type Page = { creditHistory: PagedConnection<CreditEntryNode> };
    const out: CreditEntryNode[] = [];
    let after: string | null = null;
    do {
      const res: GqlAnswer<Page> = await h.gql<Page>(HISTORY, { ...vars, after }, key);
      expect(res.errors).toBeUndefined();
      for (const { node } of res.data.creditHistory.edges) out.push(node);
      after = res.data.creditHistory.pageInfo.hasNextPage ? res.data.creditHistory.pageInfo.endCursor : null;
    } while (after);
    return out.map((n) => ({
      id: n.id,
      created_at: n.createdAt,
      kind: n.kind,
      amount: String(n.amount),
      available_delta: String(n.availableDelta),
      held_delta: String(n.heldDelta),
      job_id: n.jobId ?? '',
      reason: n.reason ?? '',
    }));
  }
  const withoutJoined = (rows: Record<string, string>[]) => rows.map(({ account_id: _a, operation: _o, ...rest }) => rest);

  /** A task that succeeded (HOLD, CAPTURE) or failed (HOLD, RELEASE), without a provider. */
  const task = (accountId: string, outcome: 'succeed' | 'fail', operation: 'PARSE' | 'TRANSCRIBE' = 'PARSE', amount = 1) =>
    factories(h).job({ accountId }, { status: outcome === 'succeed' ? 'SUCCEEDED' : 'FAILED', operation, charged: amount });

  /** Ledger lines at chosen times (they satisfy the table's checks; the balance is not the point here). */
  async function entriesAt(accountId: string, entries: [kind: 'GRANT' | 'ADJUST' | 'EXPIRE', at: string][]) {
    for (const [kind, at] of entries) {
      await db.query(
        `insert into credit_entry (account_id, kind, amount, available_delta, held_delta, reason, created_at)
         values ($1, $2, 3, $3, 0, $4, $5)`,
        [accountId, kind, kind === 'GRANT' ? 3 : -3, `${kind} at ${at}`, at],
      );
    }
  }

  it('streams the caller’s history as CSV: header, newest first, the same rows as creditHistory', async () => {
    const a = await h.account({ credits: 20 });
    const parsed = await task(a.accountId, 'succeed');
    const transcribed = await task(a.accountId, 'succeed', 'TRANSCRIBE', 3);
    const failed = await task(a.accountId, 'fail');
    await h.services.ledger.grant(a.accountId, 5, 'top-up');
    await h.account({ credits: 9 }); // someone else's history stays out

    const res = await get('/api/credit-history.csv', a.key);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="credit-history-${a.accountId}.csv"`);
    expect(res.body.split('\n')[0]).toBe(HEADER);
    expect(res.body.endsWith('\n')).toBe(true);

    const rows = csvRecords(res.body);
    expect(rows.map((r) => r.kind)).toEqual(['GRANT', 'RELEASE', 'HOLD', 'CAPTURE', 'HOLD', 'CAPTURE', 'HOLD', 'GRANT']);
    expect(rows.every((r) => r.account_id === a.accountId)).toBe(true);
    expect(rows.map((r) => r.operation)).toEqual(['', 'PARSE', 'PARSE', 'TRANSCRIBE', 'TRANSCRIBE', 'PARSE', 'PARSE', '']);
    expect(rows.map((r) => r.job_id)).toEqual(['', failed, failed, transcribed, transcribed, parsed, parsed, '']);
    expect(rows.find((r) => r.kind === 'CAPTURE' && r.job_id === transcribed)).toMatchObject({
      amount: '3',
      available_delta: '0',
      held_delta: '-3',
    });
    for (const r of rows) expect(r.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(withoutJoined(rows)).toEqual(await viaGraphql(a.key, {}));
  });

  it('quotes reasons with commas, quotes, newlines and non-ASCII text, in UTF-8', async () => {
    const a = await h.account({ credits: 0 });
    const reasons = [
      'Refund, order "A-17", see ticket',
      'two\nlines\r\nand a carriage return',
      'Crédit offert — ありがとう 🎉 Grüße',
      '"quoted", all of it',
      ' leading and trailing spaces ',
      '=1+2',
    ];
    for (const reason of reasons) await h.services.ledger.grant(a.accountId, 1, reason);

    const res = await get('/api/credit-history.csv', a.key);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('"Refund, order ""A-17"", see ticket"');
    expect(res.body).toContain('"two\nlines\r\nand a carriage return"');
    // Fields without a delimiter, quote or line break are left bare.
    expect(res.body).toContain(',Crédit offert — ありがとう 🎉 Grüße\n');
    const bytes = Buffer.from(res.body, 'utf8');
    expect(bytes.includes(Buffer.from('ありがとう 🎉', 'utf8'))).toBe(true);

    const rows = csvRecords(res.body);
    expect(rows.map((r) => r.reason)).toEqual([...reasons].reverse());
    expect(withoutJoined(rows)).toEqual(await viaGraphql(a.key, {}));
  });

  it('filters by from (inclusive), to (exclusive) and kinds, as creditHistory does', async () => {
    const a = await h.account({ credits: 0 });
    await entriesAt(a.accountId, [
      ['GRANT', '2026-01-01T00:00:00Z'],
      ['ADJUST', '2026-01-02T00:00:00Z'],
      ['EXPIRE', '2026-01-02T12:00:00.123456Z'],
      ['GRANT', '2026-01-03T00:00:00Z'],
      ['ADJUST', '2026-01-04T00:00:00Z'],
    ]);
    const [d1, d2, d2noon, d3, d4] = [
      '2026-01-01T00:00:00.000Z',
      '2026-01-02T00:00:00.000Z',
      '2026-01-02T12:00:00.123Z',
      '2026-01-03T00:00:00.000Z',
      '2026-01-04T00:00:00.000Z',
    ];
    const cases: { query: string; vars: Record<string, unknown>; expected: string[] }[] = [
      { query: '', vars: {}, expected: [d4, d3, d2noon, d2, d1] },
      { query: 'from=2026-01-02T00:00:00Z', vars: { from: '2026-01-02T00:00:00Z' }, expected: [d4, d3, d2noon, d2] },
      { query: 'to=2026-01-03T00:00:00Z', vars: { to: '2026-01-03T00:00:00Z' }, expected: [d2noon, d2, d1] },
      {
        // An offset other than Z (its + encoded, as a query string needs) and fractional seconds.
        query: 'from=2026-01-02T01:00:00%2B01:00&to=2026-01-04T00:00:00.000Z',
        vars: { from: '2026-01-02T01:00:00+01:00', to: '2026-01-04T00:00:00.000Z' },
        expected: [d3, d2noon, d2],
      },
      { query: 'kinds=GRANT,EXPIRE', vars: { kinds: ['GRANT', 'EXPIRE'] }, expected: [d3, d2noon, d1] },
      { query: 'kinds=GRANT&kinds=EXPIRE', vars: { kinds: ['GRANT', 'EXPIRE'] }, expected: [d3, d2noon, d1] },
      {
        query: 'kinds=ADJUST&kinds=GRANT,ADJUST&from=2026-01-02T00:00:00Z',
        vars: { kinds: ['ADJUST', 'GRANT'], from: '2026-01-02T00:00:00Z' },
        expected: [d4, d3, d2],
      },
      { query: `kinds=EXPIRE&accountId=${a.accountId}`, vars: { kinds: ['EXPIRE'], a: a.accountId }, expected: [d2noon] },
    ];
    for (const c of cases) {
      const res = await get(`/api/credit-history.csv${c.query ? `?${c.query}` : ''}`, a.key);
      expect({ query: c.query, status: res.statusCode }).toEqual({ query: c.query, status: 200 });
      const rows = csvRecords(res.body);
      expect({ query: c.query, at: rows.map((r) => r.created_at) }).toEqual({ query: c.query, at: c.expected });
      expect(withoutJoined(rows)).toEqual(await viaGraphql(a.key, c.vars));
    }
    // An empty selection is still a file: the header alone.
    expect((await get('/api/credit-history.csv?kinds=HOLD', a.key)).body).toBe(`${HEADER}\n`);
  });

  it('pages through equal timestamps, and times written with microseconds, without losing or repeating a row', async () => {
    const a = await h.account({ credits: 0 });
    const at = [
      '2026-02-01T00:00:00.123456Z',
      '2026-02-01T00:00:00.123456Z',
      '2026-02-01T00:00:00.123789Z',
      '2026-02-01T00:00:00.123999Z',
      '2026-02-01T00:00:00.123001Z',
      '2026-02-01T00:00:00.123456Z',
      '2026-02-01T00:00:00.124Z',
    ];
    await entriesAt(
      a.accountId,
      at.map((t) => ['ADJUST', t]),
    );
    const all: string[] = [];
    for await (const batch of h.repositories.history.batches({ accountId: a.accountId }, 2)) {
      expect(batch.length).toBeLessThanOrEqual(2);
      all.push(...batch.map((r) => r.id));
    }
    const expected = await db.query<{ id: string }>(
      `select id::text from credit_entry where account_id = $1 order by created_at desc, id desc`,
      [a.accountId],
    );
    expect(all).toEqual(expected.rows.map((r) => r.id));
    const csv = csvRecords((await get('/api/credit-history.csv', a.key)).body);
    expect(csv.map((r) => r.id)).toEqual(all);
    // Creation times are kept to the millisecond, rounded as they are written (a page cursor carries milliseconds).
    expect(csv.map((r) => r.created_at)).toEqual([
      ...Array(3).fill('2026-02-01T00:00:00.124Z'),
      ...Array(4).fill('2026-02-01T00:00:00.123Z'),
    ]);
    expect(withoutJoined(csv)).toEqual(await viaGraphql(a.key, {}));
  });

  it('lets analysts export any account and refuses everyone else with 403 FORBIDDEN', async () => {
    const customer = await h.account({ credits: 4 });
    await task(customer.accountId, 'succeed');
    const other = await h.account({ credits: 1 });
    const analyst = await h.services.accounts.create(OPERATOR, { name: 'Ana Lyst', roles: ['analyst'] });
    const analystKey = (await h.services.apiKeys.create(OPERATOR, analyst.id, 'analysis', ['read'])).key;
    const admin = await h.services.accounts.create(OPERATOR, { name: 'Ad Min', roles: ['admin'] });
    const adminKey = (await h.services.apiKeys.create(OPERATOR, admin.id, 'admin', ['read'])).key;

    const refused = await get(`/api/credit-history.csv?accountId=${customer.accountId}`, other.key);
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['content-type']).toMatch(/^application\/json/);
    expect(refused.json()).toEqual({ error: { code: 'FORBIDDEN', message: expect.any(String), requestId: expect.any(String) } });
    expect(refused.body).not.toContain('CAPTURE');

    // Naming one's own account is the default spelled out.
    const own = await get(`/api/credit-history.csv?accountId=${other.accountId}`, other.key);
    expect(own.statusCode).toBe(200);
    expect(csvRecords(own.body).map((r) => r.kind)).toEqual(['GRANT']);

    for (const key of [analystKey, adminKey]) {
      const res = await get(`/api/credit-history.csv?accountId=${customer.accountId}`, key);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-disposition']).toBe(`attachment; filename="credit-history-${customer.accountId}.csv"`);
      const rows = csvRecords(res.body);
      expect(rows.map((r) => r.kind)).toEqual(['CAPTURE', 'HOLD', 'GRANT']);
      expect(withoutJoined(rows)).toEqual(await viaGraphql(key, { a: customer.accountId }));
    }
    // Without accountId an analyst gets their own (empty) history, not everyone's.
    expect((await get('/api/credit-history.csv', analystKey)).body).toBe(`${HEADER}\n`);

    // A key without the read scope may not read history at all.
    const parseOnly = await h.account({ credits: 1, scopes: ['parse'] });
    const noScope = await get('/api/credit-history.csv', parseOnly.key);
    expect(noScope.statusCode).toBe(403);
    expect(noScope.json<ErrorBody>().error.code).toBe('FORBIDDEN');
  });

  it('answers 400 INVALID_INPUT, naming the parameter, for bad dates, kinds and parameters, and streams nothing', async () => {
    const a = await h.account({ credits: 1 });
    const bad: [query: string, details: string[]][] = [
      ['from=yesterday', ['from']],
      ['to=2026-02-30T00:00:00Z', ['to']],
      ['from=2026-01-01', ['from']],
      ['from=2026-01-01T00:00:00', ['from']],
      ['to=2026-01-01T25:00:00Z', ['to']],
      ['from=2026-01-01T00:00:00+01:00', ['from']], // an unencoded + reads as a space
      ['from=2026-01-01T00:00:00Z&from=2026-01-02T00:00:00Z', ['from']],
      ['kinds=GRANT,REFUND', ['kinds']],
      ['kinds=grant', ['kinds']],
      ['kinds=GRANT&kinds=', ['kinds']],
      ['accountId=not-an-id', ['accountId']],
      ['kind=GRANT', ['kind']],
      ['from=soon&to=later&kinds=NOPE', ['from', 'to', 'kinds']],
    ];
    for (const [query, fields] of bad) {
      const res = await get(`/api/credit-history.csv?${query}`, a.key);
      expect({ query, status: res.statusCode }).toEqual({ query, status: 400 });
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['content-disposition']).toBeUndefined();
      const { error } = res.json<ErrorBody>();
      expect(error.code).toBe('INVALID_INPUT');
      expect({ query, details: Object.keys(error.details!).sort() }).toEqual({ query, details: [...fields].sort() });
    }
  });

  it('takes exactly the date-times the GraphQL DateTime scalar takes: one parser for both doors', async () => {
    const a = await h.account({ credits: 1 });
    const cases: [text: string, valid: boolean][] = [
      ['2024-02-29T00:00:00Z', true], // a leap day
      ['2000-02-29T12:00:00.5+05:30', true],
      ['2026-01-01t00:00:00z', true], // RFC 3339 allows lower-case t and z
      ['2023-02-29T00:00:00Z', false],
      ['1900-02-29T00:00:00Z', false], // 1900 was not a leap year
      ['2026-04-31T00:00:00Z', false],
      ['2026-13-01T00:00:00Z', false],
      ['2026-01-01T24:00:00Z', false],
      ['2026-01-01T00:00:00+24:00', false],
      ['2026-01-01 00:00:00Z', false],
      ['2026-01-01T00:00Z', false],
    ];
    for (const [text, valid] of cases) {
      const rest = await get(`/api/credit-history.csv?from=${encodeURIComponent(text)}`, a.key);
      const gql = await h.gql(
        'query($from: DateTime) { creditHistory(from: $from, first: 1) { edges { node { id } } } }',
        { from: text },
        a.key,
      );
      expect({ text, rest: rest.statusCode, graphql: gql.errors ? 'refused' : 'taken' }).toEqual({
        text,
        rest: valid ? 200 : 400,
        graphql: valid ? 'taken' : 'refused',
      });
      if (!valid)
        expect({ text, code: rest.json<ErrorBody>().error.code, details: Object.keys(rest.json<ErrorBody>().error.details!) }).toEqual({
          text,
          code: 'INVALID_INPUT',
          details: ['from'],
        });
    }
  });

  it('answers 401 UNAUTHENTICATED without a valid key', async () => {
    const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer mg_live_nope_nope' }, { authorization: 'Basic Zm9vOmJhcg==' }];
    for (const headers of attempts) {
      const res = await h.request('GET', '/api/credit-history.csv', { headers });
      expect(res.statusCode).toBe(401);
      expect(res.json<ErrorBody>().error.code).toBe('UNAUTHENTICATED');
    }
    // Before looking at the filters: a caller without a key learns nothing about them.
    expect((await h.request('GET', '/api/credit-history.csv?from=nope')).statusCode).toBe(401);
  });

  it('aborts the response, rather than end a file short, when the database fails mid-way', async () => {
    const a = await h.account({ credits: 2 });
    // Enough rows for bytes to be on their way (about 200 KB) before the failure.
    const rows = Array.from({ length: 2000 }, (_, i) => ({
      id: String(2000 - i),
      createdAt: '2026-01-01T00:00:00.000Z',
      accountId: a.accountId,
      kind: 'GRANT' as const,
      amount: '2',
      availableDelta: '2',
      heldDelta: '0',
      jobId: null,
      operation: null,
      reason: 'a reason long enough to fill the pipes',
    }));
    const spy = jest.spyOn(CreditHistoryRepository.prototype, 'batches').mockImplementation(async function* () {
      yield rows;
      throw new Error('connection lost');
    });
    try {
      await expect(get('/api/credit-history.csv', a.key)).rejects.toThrow();
    } finally {
      spy.mockRestore();
    }
    // A failure before the first byte is an ordinary error body.
    // biome-ignore lint/correctness/useYield: a generator that fails before its first batch
    const before = jest.spyOn(CreditHistoryRepository.prototype, 'batches').mockImplementation(async function* () {
      throw new Error('connection refused');
    });
    try {
      const res = await get('/api/credit-history.csv', a.key);
      expect(res.statusCode).toBe(500);
      expect(res.json<ErrorBody>().error).toEqual({ code: 'INTERNAL_ERROR', message: expect.any(String), requestId: expect.any(String) });
      expect(res.body).not.toContain('connection refused');
    } finally {
      before.mockRestore();
    }
    expect((await get('/api/credit-history.csv', a.key)).statusCode).toBe(200);
  });
});

// The million-row history is in credit-history-csv.long.test.ts (`npm run test:long`).
describeExportMemory(100_000);
