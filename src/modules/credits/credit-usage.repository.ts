import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../errors.js';

export const USAGE_GROUPINGS = ['DAY', 'WEEK', 'MONTH'] as const;
export type UsageGrouping = (typeof USAGE_GROUPINGS)[number];
export const USAGE_DIMENSIONS = ['OPERATION', 'ACCOUNT'] as const;
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number];

/** Credits consumed in one period by one operation or account. */
export interface UsageBucket {
  period: Date;
  key: string;
  credits: number;
  tasks: number;
}

const MAX_SPAN_DAYS = 400;

/** What was consumed: captured holds only (a failed task consumed nothing), bucketed by UTC period. */
export class CreditUsageRepository {
  constructor(private readonly em: () => EntityManager) {}

  async usage(opts: {
    from: Date;
    to: Date;
    groupBy: UsageGrouping;
    by: UsageDimension;
    accountId: string | null;
  }): Promise<UsageBucket[]> {
    if (!(opts.from < opts.to)) throw new AppError('INVALID_INPUT', 'from must be before to.', { from: 'must be before to' });
    if (opts.to.getTime() - opts.from.getTime() > MAX_SPAN_DAYS * 86_400_000) {
      throw new AppError('INVALID_INPUT', `The range may span at most ${MAX_SPAN_DAYS} days.`, {
        to: `at most ${MAX_SPAN_DAYS} days after from`,
      });
    }
    const unit = opts.groupBy.toLowerCase();
    const key = opts.by === 'ACCOUNT' ? 'e.account_id::text' : 'j.operation';
    const rows = await this.em()
      .getConnection()
      .execute<{ period: string | Date; key: string; credits: string; tasks: string }[]>(
        `select date_trunc('${unit}', e.created_at at time zone 'UTC') at time zone 'UTC' as period, ${key} as key,
                sum(e.amount) as credits, count(*) as tasks
           from credit_entry e join job j on j.id = e.job_id
          where e.kind = 'CAPTURE' and e.created_at >= ? and e.created_at < ?
            ${opts.accountId ? 'and e.account_id = ?' : ''}
          group by 1, 2 order by 1, 2`,
        [opts.from.toISOString(), opts.to.toISOString(), ...(opts.accountId ? [opts.accountId] : [])],
      );
    return rows.map((r) => ({ period: new Date(r.period), key: r.key, credits: Number(r.credits), tasks: Number(r.tasks) }));
  }
}
