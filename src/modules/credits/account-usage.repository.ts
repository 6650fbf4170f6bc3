import type { EntityManager } from '@mikro-orm/postgresql';
import { isUuid } from '../../db/sql-values.js';
import { AppError } from '../../errors.js';

/** What one account consumed by one operation in a window. */
export interface OperationUsage {
  accountId: string;
  /** PARSE or TRANSCRIBE */
  operation: string;
  credits: number;
  /** Successful (charged) tasks. */
  tasks: number;
}

/** The longest window one can ask for, the same as creditUsage allows. */
const MAX_SPAN_DAYS = 400;

/** Consumption per account and operation: captured holds only, as creditUsage counts it. */
export class AccountUsageRepository {
  constructor(private readonly em: () => EntityManager) {}

  /**
   * Several accounts' usage in [from, to) in one query, ordered by account and operation; an
   * account that consumed nothing has no rows. With `onlyAccount`, only that account is read.
   */
  async byOperation(
    accountIds: readonly string[],
    window: { from: Date; to: Date },
    onlyAccount: string | null,
  ): Promise<OperationUsage[]> {
    const { from, to } = window;
    if (!(from < to)) throw new AppError('INVALID_INPUT', 'from must be before to.', { from: 'must be before to' });
    if (to.getTime() - from.getTime() > MAX_SPAN_DAYS * 86_400_000) {
      throw new AppError('INVALID_INPUT', `The range may span at most ${MAX_SPAN_DAYS} days.`, {
        to: `at most ${MAX_SPAN_DAYS} days after from`,
      });
    }
    const wanted = accountIds.filter((id) => isUuid(id) && (onlyAccount === null || id === onlyAccount));
    if (!wanted.length) return [];
    const rows = await this.em()
      .getConnection()
      .execute<{ account_id: string; operation: string; credits: string; tasks: string }[]>(
        `select e.account_id, j.operation, sum(e.amount) as credits, count(*) as tasks
           from credit_entry e join job j on j.id = e.job_id
          where e.kind = 'CAPTURE' and e.account_id in (?) and e.created_at >= ? and e.created_at < ?
          group by 1, 2 order by 1, 2`,
        [wanted, from.toISOString(), to.toISOString()],
      );
    return rows.map((r) => ({ accountId: r.account_id, operation: r.operation, credits: Number(r.credits), tasks: Number(r.tasks) }));
  }
}
