import type { EntityManager } from '@mikro-orm/postgresql';
import { isUuid } from '../../db/sql-values.js';
import { AppError } from '../../errors.js';
import { Job } from '../jobs/job.entity.js';
import { decodeCursor, pageSize, toPage, type Page } from '../paging.js';
import { CreditEntry } from './credit-entry.entity.js';

/** One row of the history as a person reads it: a task (its job), or a ledger entry of no task (a grant, an adjustment, an expiry). */
export type TaskHistoryRow = { job: Job; entry: null } | { job: null; entry: CreditEntry };

/** Where a row sits: newest first; at one instant tasks before entries, then by id, descending. */
interface Position {
  createdAt: Date;
  kind: 'job' | 'entry';
  id: string;
}

const positionOf = (row: TaskHistoryRow): Position =>
  row.job
    ? { createdAt: row.job.createdAt, kind: 'job', id: row.job.id }
    : { createdAt: row.entry.createdAt, kind: 'entry', id: String(row.entry.id) };

/** Negative when `a` comes first. Job ids compare as PostgreSQL compares uuids: their lowercase hex. */
function compare(a: Position, b: Position): number {
  if (a.createdAt.getTime() !== b.createdAt.getTime()) return b.createdAt.getTime() - a.createdAt.getTime();
  if (a.kind !== b.kind) return a.kind === 'job' ? -1 : 1;
  if (a.kind === 'entry') return Number(b.id) - Number(a.id);
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/** The credit history with a task's holds, capture or release folded into one row per task. */
export class TaskHistoryRepository {
  constructor(private readonly em: () => EntityManager) {}

  /**
   * A page of the account's rows, newest first: the next `first` of its jobs and of its entries
   * that belong to no job, each read by its own keyset (size + 1 of each), merged.
   */
  async list(accountId: string, first: number | null | undefined, after: string | null | undefined): Promise<Page<TaskHistoryRow>> {
    const size = pageSize(first);
    const jobs: Record<string, unknown> = { accountId };
    const entries: Record<string, unknown> = { accountId, jobId: null };
    if (after) {
      const c = cursorPosition(after);
      if (c.kind === 'job') {
        jobs.$or = [{ createdAt: { $lt: c.createdAt } }, { createdAt: c.createdAt, id: { $lt: c.id } }];
        entries.createdAt = { $lte: c.createdAt };
      } else {
        jobs.createdAt = { $lt: c.createdAt };
        entries.$or = [{ createdAt: { $lt: c.createdAt } }, { createdAt: c.createdAt, id: { $lt: Number(c.id) } }];
      }
    }
    const em = this.em();
    const jobRows = await em.find(Job, jobs, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: size + 1 });
    const entryRows = await em.find(CreditEntry, entries, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: size + 1 });
    const rows: TaskHistoryRow[] = [...jobRows.map((job) => ({ job, entry: null })), ...entryRows.map((entry) => ({ job: null, entry }))];
    rows.sort((a, b) => compare(positionOf(a), positionOf(b)));
    return toPage(rows.slice(0, size + 1), size, (row) => {
      const p = positionOf(row);
      return { createdAt: p.createdAt, id: `${p.kind}:${p.id}` };
    });
  }
}

function cursorPosition(after: string): Position {
  const { createdAt, id } = decodeCursor(after);
  const m = /^(job|entry):(.+)$/.exec(id);
  if (!m || (m[1] === 'job' ? !isUuid(m[2]) : !/^\d+$/.test(m[2]))) {
    throw new AppError('INVALID_INPUT', 'after is not a cursor from this API.', { after: 'invalid cursor' });
  }
  return { createdAt, kind: m[1] as 'job' | 'entry', id: m[2] };
}
