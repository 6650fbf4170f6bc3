import type { EntityManager } from '@mikro-orm/postgresql';
import { isUuid } from '../../db/sql-values.js';
import { decodeCursor, pageSize, toPage, type Page } from '../paging.js';
import { AppError } from '../../errors.js';
import { CreditEntry, type CreditEntryKind } from './credit-entry.entity.js';

export interface HistoryFilter {
  accountId: string;
  from?: Date | null;
  to?: Date | null;
  kinds?: CreditEntryKind[] | null;
  first?: number | null;
  after?: string | null;
}

/** One ledger line as the export writes it: the column values as text, as PostgreSQL gives them. */
export interface HistoryExportRow {
  id: string;
  /** ISO-8601 in UTC, to the millisecond (as the GraphQL `DateTime` shows it). */
  createdAt: string;
  accountId: string;
  kind: CreditEntryKind;
  amount: string;
  availableDelta: string;
  heldDelta: string;
  jobId: string | null;
  /** The job's operation (PARSE, TRANSCRIBE) when the entry belongs to a job. */
  operation: string | null;
  reason: string | null;
}

interface ExportRecord {
  id: string;
  /** created_at to the microsecond, ISO-8601 in UTC: the row's exact keyset position (a JS Date keeps only milliseconds). */
  position: string;
  account_id: string;
  kind: CreditEntryKind;
  amount: string;
  available_delta: string;
  held_delta: string;
  job_id: string | null;
  operation: string | null;
  reason: string | null;
}

/** How many rows one export query reads. */
export const EXPORT_BATCH_SIZE = 1000;

/** Reads of the append-only ledger, newest first. */
export class CreditHistoryRepository {
  constructor(private readonly em: () => EntityManager) {}

  async list(f: HistoryFilter): Promise<Page<CreditEntry>> {
    const size = pageSize(f.first);
    const where: Record<string, unknown> = { accountId: f.accountId };
    const createdAt: Record<string, Date> = {};
    if (f.from) createdAt.$gte = f.from;
    if (f.to) createdAt.$lt = f.to;
    if (Object.keys(createdAt).length) where.createdAt = createdAt;
    if (f.kinds?.length) where.kind = { $in: f.kinds };
    if (f.after) {
      const c = decodeCursor(f.after);
      if (!/^\d+$/.test(c.id)) throw new AppError('INVALID_INPUT', 'after is not a cursor from this API.', { after: 'invalid cursor' });
      where.$and = [{ $or: [{ createdAt: { $lt: c.createdAt } }, { createdAt: c.createdAt, id: { $lt: Number(c.id) } }] }];
    }
    const rows = await this.em().find(CreditEntry, where, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: size + 1 });
    return toPage(rows, size, (e) => e);
  }

  /** The entries of several jobs in one query, oldest first. With `onlyAccount`, only that account's entries are read. */
  async forJobs(jobIds: readonly string[], onlyAccount: string | null): Promise<CreditEntry[]> {
    const wanted = jobIds.filter(isUuid);
    if (!wanted.length) return [];
    return this.em().find(
      CreditEntry,
      { jobId: { $in: wanted }, ...(onlyAccount === null ? {} : { accountId: onlyAccount }) },
      { orderBy: { id: 'asc' } },
    );
  }

  /**
   * Every entry the filter selects, newest first, in batches of `batchSize` rows: one short query per
   * batch, keyset-paged on (created_at, id), so memory stays bounded however long the history is,
   * no connection or transaction is held between batches (PGlite has a single session), and the
   * order is the one `list` pages through.
   */
  async *batches(f: Omit<HistoryFilter, 'first' | 'after'>, batchSize = EXPORT_BATCH_SIZE): AsyncGenerator<HistoryExportRow[]> {
    const conditions: string[] = [];
    const params: unknown[] = [];
    const where = (sql: string, ...values: unknown[]) => {
      conditions.push(sql);
      params.push(...values);
    };
    where('e.account_id = ?', f.accountId);
    if (f.from) where('e.created_at >= ?', f.from.toISOString());
    if (f.to) where('e.created_at < ?', f.to.toISOString());
    if (f.kinds?.length) where(`e.kind in (${f.kinds.map(() => '?').join(', ')})`, ...f.kinds);
    let after: { position: string; id: string } | null = null;
    for (;;) {
      const keyset: string = after ? ' and (e.created_at, e.id) < (?::timestamptz, ?::bigint)' : '';
      const sql = `select e.id::text as id,
                          to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as position,
                          e.account_id, e.kind, e.amount::text as amount, e.available_delta::text as available_delta,
                          e.held_delta::text as held_delta, e.job_id,
                          (select j.operation from job j where j.id = e.job_id) as operation, e.reason
                     from credit_entry e
                    where ${conditions.join(' and ')}${keyset}
                    order by e.created_at desc, e.id desc
                    limit ?`;
      const values = [...params, ...(after ? [after.position, after.id] : [])];
      const rows: ExportRecord[] = await this.em().transactional(async (em) => {
        // Each batch must cost one batch: read (account_id, created_at desc, id desc) in index order
        // and stop at the limit. Without statistics (PGlite never autovacuums) the planner may
        // prefer a bitmap scan of every remaining row plus a sort, per batch: quadratic on a long
        // history. SET LOCAL: for this short transaction only.
        await em.execute(
          `select set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true), set_config('enable_sort', 'off', true)`,
        );
        return em.execute<ExportRecord[]>(sql, [...values, batchSize]);
      });
      if (rows.length) yield rows.map(toExportRow);
      if (rows.length < batchSize) return;
      const last = rows[rows.length - 1];
      after = { position: last.position, id: last.id };
    }
  }
}

function toExportRow(r: ExportRecord): HistoryExportRow {
  return {
    id: r.id,
    // Microseconds cut to milliseconds, as a JS Date (and so GraphQL) has them.
    createdAt: `${r.position.slice(0, -4)}Z`,
    accountId: r.account_id,
    kind: r.kind,
    amount: r.amount,
    availableDelta: r.available_delta,
    heldDelta: r.held_delta,
    jobId: r.job_id,
    operation: r.operation,
    reason: r.reason,
  };
}
