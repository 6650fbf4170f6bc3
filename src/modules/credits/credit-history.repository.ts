import type { EntityManager } from '@mikro-orm/postgresql';
import { decodeCursor, pageSize, toPage, type Page } from '../../graphql/connection.js';
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
}
