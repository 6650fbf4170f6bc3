import { isUuid } from '../../db/sql-values.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { decodeCursor, pageSize, toPage, type Page } from '../paging.js';
import { AppError } from '../../errors.js';
import { Job } from './job.entity.js';

/** Reads of jobs, always within one account. */
export class JobRepository {
  constructor(private readonly em: () => EntityManager) {}

  /** One of the account's jobs; NOT_FOUND for anything else, so other accounts' ids reveal nothing. */
  async get(accountId: string, id: string): Promise<Job> {
    const job = isUuid(id) ? await this.em().findOne(Job, { id, accountId }) : null;
    if (!job) throw new AppError('NOT_FOUND', 'No such job.');
    return job;
  }

  /** Several jobs by id in one query, in no particular order. With `onlyAccount`, only that account's jobs are read. */
  async getMany(ids: readonly string[], onlyAccount: string | null): Promise<Job[]> {
    const wanted = ids.filter(isUuid);
    if (!wanted.length) return [];
    return this.em().find(Job, { id: { $in: wanted }, ...(onlyAccount === null ? {} : { accountId: onlyAccount }) });
  }

  async list(accountId: string, first: number | null | undefined, after: string | null | undefined): Promise<Page<Job>> {
    const size = pageSize(first);
    const where: Record<string, unknown> = { accountId };
    if (after) {
      const c = decodeCursor(after);
      if (!isUuid(c.id)) throw new AppError('INVALID_INPUT', 'after is not a cursor from this API.', { after: 'invalid cursor' });
      where.$or = [{ createdAt: { $lt: c.createdAt } }, { createdAt: c.createdAt, id: { $lt: c.id } }];
    }
    const rows = await this.em().find(Job, where, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: size + 1 });
    return toPage(rows, size, (j) => j);
  }
}
