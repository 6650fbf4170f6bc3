import { creditPolicy } from './credit.policy.js';
import type { Principal } from '../api-keys/api-key.service.js';
import type { Page } from '../paging.js';
import type { AccountUsageRepository, OperationUsage } from './account-usage.repository.js';
import type { CreditEntry, CreditEntryKind } from './credit-entry.entity.js';
import { exportCreditHistoryCsv, parseCreditHistoryQuery, type CreditHistoryCsv } from './credit-history.export.js';
import type { CreditHistoryRepository } from './credit-history.repository.js';
import type { CreditUsageRepository, UsageBucket, UsageDimension, UsageGrouping } from './credit-usage.repository.js';
import type { TaskHistoryRepository, TaskHistoryRow } from './task-history.repository.js';

/**
 * What a caller may read of the ledger, for both doors: the entries (GraphQL `creditHistory`, the CSV
 * export), the same history one row per task (the account page's), and usage. Every read needs the
 * `read` scope; a caller reads its own account, analysts and admins any (the rule is written here once).
 */
export class CreditHistoryService {
  constructor(
    private readonly entries: CreditHistoryRepository,
    private readonly tasks: TaskHistoryRepository,
    private readonly buckets: CreditUsageRepository,
    private readonly accountUsage: AccountUsageRepository,
  ) {}

  /** Ledger entries, newest first, a page at a time. */
  list(
    principal: Principal,
    f: {
      accountId?: string | null;
      from?: Date | null;
      to?: Date | null;
      kinds?: CreditEntryKind[] | null;
      first?: number | null;
      after?: string | null;
    },
  ): Promise<Page<CreditEntry>> {
    return this.entries.list({ ...f, accountId: creditPolicy.read(principal, f.accountId) });
  }

  /** The same history as a CSV download (GET /api/credit-history.csv), from the query string's filters. */
  exportCsv(principal: Principal, query: Record<string, unknown>): Promise<CreditHistoryCsv> {
    creditPolicy.read(principal);
    const filter = parseCreditHistoryQuery(query);
    return exportCreditHistoryCsv(this.entries, { ...filter, accountId: creditPolicy.read(principal, filter.accountId) });
  }

  /** The caller's own history, one row per task. */
  byTask(principal: Principal, first: number | null | undefined, after: string | null | undefined): Promise<Page<TaskHistoryRow>> {
    return this.tasks.list(creditPolicy.read(principal), first, after);
  }

  /** Credits consumed per period: every account's for analysts, the caller's own for others. */
  usage(principal: Principal, q: { from: Date; to: Date; groupBy: UsageGrouping; by: UsageDimension }): Promise<UsageBucket[]> {
    creditPolicy.read(principal);
    return this.buckets.usage({ ...q, accountId: creditPolicy.readMany(principal) });
  }

  /** The entries of many jobs at once (a batching loader's): only those the caller may read. */
  forJobs(principal: Principal, jobIds: readonly string[]): Promise<CreditEntry[]> {
    return this.entries.forJobs(jobIds, creditPolicy.readMany(principal));
  }

  /** Usage per operation of many accounts at once (a batching loader's): only those the caller may read. */
  usageOfAccounts(principal: Principal, accountIds: readonly string[], window: { from: Date; to: Date }): Promise<OperationUsage[]> {
    return this.accountUsage.byOperation(accountIds, window, creditPolicy.readMany(principal));
  }
}
