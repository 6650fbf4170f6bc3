import { accountToRead, readableAccount, requireScope } from '../access.js';
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
    requireScope(principal, 'read');
    return this.entries.list({ ...f, accountId: accountToRead(principal, f.accountId) });
  }

  /** The same history as a CSV download (GET /api/credit-history.csv), from the query string's filters. */
  exportCsv(principal: Principal, query: Record<string, unknown>): Promise<CreditHistoryCsv> {
    requireScope(principal, 'read');
    const filter = parseCreditHistoryQuery(query);
    return exportCreditHistoryCsv(this.entries, { ...filter, accountId: accountToRead(principal, filter.accountId) });
  }

  /** The caller's own history, one row per task. */
  byTask(principal: Principal, first: number | null | undefined, after: string | null | undefined): Promise<Page<TaskHistoryRow>> {
    requireScope(principal, 'read');
    return this.tasks.list(principal.accountId, first, after);
  }

  /** Credits consumed per period: every account's for analysts, the caller's own for others. */
  usage(principal: Principal, q: { from: Date; to: Date; groupBy: UsageGrouping; by: UsageDimension }): Promise<UsageBucket[]> {
    requireScope(principal, 'read');
    return this.buckets.usage({ ...q, accountId: readableAccount(principal) });
  }

  /** The entries of many jobs at once (a batching loader's): only those the caller may read. */
  forJobs(principal: Principal, jobIds: readonly string[]): Promise<CreditEntry[]> {
    return this.entries.forJobs(jobIds, readableAccount(principal));
  }

  /** Usage per operation of many accounts at once (a batching loader's): only those the caller may read. */
  usageOfAccounts(principal: Principal, accountIds: readonly string[], window: { from: Date; to: Date }): Promise<OperationUsage[]> {
    return this.accountUsage.byOperation(accountIds, window, readableAccount(principal));
  }
}
