import { Readable, Transform, pipeline } from 'node:stream';
import { stringify } from 'csv-stringify';
import { GraphQLDateTime } from 'graphql-scalars';
import { isUuid } from '../../db/sql-values.js';
import { AppError } from '../../errors.js';
import { CREDIT_ENTRY_KINDS, type CreditEntryKind } from './credit-entry.entity.js';
import type { CreditHistoryRepository, HistoryExportRow } from './credit-history.repository.js';

/** The export's columns, in order; also its header row. */
export const CREDIT_HISTORY_CSV_COLUMNS = [
  'id',
  'created_at',
  'account_id',
  'kind',
  'amount',
  'available_delta',
  'held_delta',
  'job_id',
  'operation',
  'reason',
] as const;

/** The `creditHistory` filters, as a query string carries them. */
export interface CreditHistoryExportQuery {
  accountId: string | null;
  from: Date | null;
  to: Date | null;
  kinds: CreditEntryKind[] | null;
}

export interface CreditHistoryCsv {
  accountId: string;
  filename: string;
  /** UTF-8 CSV text, produced as the client reads it. */
  body: Readable;
}

const PARAMETERS = new Set(['accountId', 'from', 'to', 'kinds']);

/**
 * Reads `accountId`, `from`, `to` and `kinds` (comma-separated and/or repeated) from a parsed query
 * string. Every problem is reported at once, each under its parameter's name: 400 INVALID_INPUT.
 */
export function parseCreditHistoryQuery(query: Record<string, unknown>): CreditHistoryExportQuery {
  const problems: Record<string, string> = {};
  for (const name of Object.keys(query))
    if (!PARAMETERS.has(name)) problems[name] = 'unknown parameter; allowed: accountId, from, to, kinds';

  const single = (name: string): string | null => {
    const v = query[name];
    if (v === undefined || v === '') return null;
    if (typeof v !== 'string') {
      problems[name] = 'give it once';
      return null;
    }
    return v;
  };
  const date = (name: string): Date | null => {
    const v = single(name);
    if (v === null) return null;
    const d = parseDateTime(v);
    if (!d) problems[name] = 'must be an ISO-8601 date-time with an offset, e.g. 2026-01-31T00:00:00Z (encode + as %2B)';
    return d;
  };

  const accountId = single('accountId');
  if (accountId !== null && !isUuid(accountId)) problems.accountId = 'must be an account id';
  const from = date('from');
  const to = date('to');

  let kinds: CreditEntryKind[] | null = null;
  const rawKinds = query.kinds;
  if (rawKinds !== undefined) {
    const values = (Array.isArray(rawKinds) ? rawKinds : [rawKinds]).flatMap((v) => String(v).split(',')).map((v) => v.trim());
    const unknown = values.filter((v) => !(CREDIT_ENTRY_KINDS as readonly string[]).includes(v));
    if (unknown.length)
      problems.kinds = `unknown kind(s) ${unknown.map((v) => JSON.stringify(v)).join(', ')}; allowed: ${CREDIT_ENTRY_KINDS.join(', ')}`;
    else kinds = [...new Set(values as CreditEntryKind[])];
  }

  if (Object.keys(problems).length) throw new AppError('INVALID_INPUT', 'The credit history filters are not valid.', problems);
  return { accountId, from, to, kinds };
}

/**
 * An account's credit history as CSV, newest first (CreditHistoryService.exportCsv decides whose).
 * Everything that can refuse the request (the first query included) happens before the returned
 * stream yields a byte, so refusals are ordinary error bodies; the rest streams in bounded memory,
 * batch by batch, as fast as the client reads.
 */
export async function exportCreditHistoryCsv(
  history: CreditHistoryRepository,
  filter: Omit<CreditHistoryExportQuery, 'accountId'> & { accountId: string },
): Promise<CreditHistoryCsv> {
  const { accountId } = filter;
  const batches = history.batches({ accountId, from: filter.from, to: filter.to, kinds: filter.kinds });
  // The first query runs now: a database failure is still a clean 500 body, not a cut-off file.
  const first = await batches.next();
  async function* records() {
    try {
      for (let batch = first; !batch.done; batch = await batches.next()) {
        const rows = batch.value;
        for (let i = 0; i < rows.length; i++) {
          const row = rows[i];
          // Let each written row go at once, not with its whole batch.
          (rows as unknown[])[i] = undefined;
          yield toRecord(row);
        }
      }
    } finally {
      // The client went away or the stream failed: stop reading.
      await batches.return(undefined);
    }
  }
  const csv = stringify({ header: true, columns: [...CREDIT_HISTORY_CSV_COLUMNS] });
  // pipeline passes a failure on to the response stream (which then aborts) and ends the reads on a disconnect.
  const body = pipeline(Readable.from(records()), csv, coalesce(), () => {});
  return { accountId, filename: `credit-history-${accountId}.csv`, body };
}

/** A row in CREDIT_HISTORY_CSV_COLUMNS order. */
function toRecord(r: HistoryExportRow): (string | null)[] {
  return [r.id, r.createdAt, r.accountId, r.kind, r.amount, r.availableDelta, r.heldDelta, r.jobId, r.operation, r.reason];
}

/**
 * csv-stringify emits one small chunk per record; sent as they are, every line would be its own
 * HTTP chunk and socket write. This gathers them into pieces of about `size` bytes.
 */
function coalesce(size = 64 * 1024): Transform {
  let parts: Buffer[] = [];
  let length = 0;
  return new Transform({
    transform(chunk: Buffer | string, _encoding, done) {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      parts.push(buf);
      length += buf.length;
      if (length >= size) {
        this.push(Buffer.concat(parts, length));
        parts = [];
        length = 0;
      }
      done();
    },
    flush(done) {
      if (length) this.push(Buffer.concat(parts, length));
      done();
    },
  });
}

/**
 * An RFC 3339 date-time (a real calendar day, a time and an offset), or null: read by the GraphQL
 * `DateTime` scalar's own parser, so this export and the `creditHistory` query take the same strings.
 */
export function parseDateTime(value: string): Date | null {
  try {
    const date: unknown = GraphQLDateTime.parseValue(value);
    return date instanceof Date ? date : null;
  } catch {
    return null;
  }
}
