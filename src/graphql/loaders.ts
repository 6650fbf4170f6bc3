import DataLoader from 'dataloader';
import type { AccountView } from '../modules/accounts/account.service.js';
import type { ApiKey } from '../modules/api-keys/api-key.entity.js';
import type { Principal } from '../modules/api-keys/api-key.service.js';
import type { OperationUsage } from '../modules/credits/account-usage.repository.js';
import type { CreditEntry } from '../modules/credits/credit-entry.entity.js';
import type { Job } from '../modules/jobs/job.entity.js';
import type { WebhookAttempt } from '../modules/webhooks/webhook.service.js';
import type { Services } from '../modules/services.js';

/**
 * The related rows field resolvers reach for, batched: every `load` made while one level of a
 * query resolves becomes one SQL statement, answered in key order. Made per request (or per
 * subscription operation), so the cache never outlives the caller it was filled for.
 */
export interface Loaders {
  /** An account with its membership and credits, or null when there is none the caller may see. */
  account: DataLoader<string, AccountView | null>;
  /** A job by id, or null. */
  job: DataLoader<string, Job | null>;
  /** An account's API keys, oldest first. */
  apiKeys: DataLoader<string, ApiKey[]>;
  /** A job's ledger entries (its holds, then its capture or release), oldest first. */
  creditEntries: DataLoader<string, CreditEntry[]>;
  /** A job's webhook delivery attempts, oldest first. */
  webhookAttempts: DataLoader<string, WebhookAttempt[]>;
  /** An account's consumption per operation in [from, to); one loader per window. */
  usage(from: Date, to: Date): DataLoader<string, OperationUsage[]>;
}

export interface LoaderOptions {
  /**
   * Memoize loaded rows for the loaders' lifetime. Off for subscriptions, whose context lives as
   * long as the subscription and whose every event must read the rows afresh.
   */
  cache?: boolean;
}

export function createLoaders(services: Services, principal: () => Promise<Principal>, { cache = true }: LoaderOptions = {}): Loaders {
  // The services read only what the caller may see (their own account's rows, or anyone's for
  // analysts and admins). Resolvers check first and answer FORBIDDEN; that is the second lock.
  const options = { cache };
  const windows = new Map<string, DataLoader<string, OperationUsage[]>>();
  // Each loader is made when first read: most operations (a parse, `me`) need none of them.
  let account: Loaders['account'] | undefined;
  let job: Loaders['job'] | undefined;
  let apiKeys: Loaders['apiKeys'] | undefined;
  let webhookAttempts: Loaders['webhookAttempts'] | undefined;
  let creditEntries: Loaders['creditEntries'] | undefined;

  return {
    get account() {
      return (account ??= new DataLoader(
        async (ids) => byKey(ids, await services.accounts.viewMany(await principal(), ids), (a) => a.id),
        options,
      ));
    },
    get job() {
      return (job ??= new DataLoader(async (ids) => byKey(ids, await services.jobs.many(await principal(), ids), (j) => j.id), options));
    },
    get apiKeys() {
      return (apiKeys ??= new DataLoader(
        async (ids) => groupByKey(ids, await services.apiKeys.listForAccounts(await principal(), ids), (k) => k.accountId),
        options,
      ));
    },
    get creditEntries() {
      return (creditEntries ??= new DataLoader(
        async (ids) => groupByKey(ids, await services.creditHistory.forJobs(await principal(), ids), (e) => e.jobId!),
        options,
      ));
    },
    get webhookAttempts() {
      return (webhookAttempts ??= new DataLoader(async (ids) => {
        const byJob = await services.webhooks.attemptsForJobs(await principal(), ids);
        return ids.map((id) => byJob.get(id) ?? []);
      }, options));
    },
    usage(from, to) {
      const window = `${from.toISOString()}/${to.toISOString()}`;
      let loader = windows.get(window);
      if (!loader) {
        loader = new DataLoader(
          async (ids) =>
            groupByKey(ids, await services.creditHistory.usageOfAccounts(await principal(), ids, { from, to }), (u) => u.accountId),
          options,
        );
        windows.set(window, loader);
      }
      return loader;
    },
  };
}

/** One row (or null) per key, in the keys' order, as DataLoader requires. */
function byKey<V>(keys: readonly string[], rows: V[], keyOf: (row: V) => string): (V | null)[] {
  const found = new Map(rows.map((r) => [keyOf(r), r]));
  return keys.map((k) => found.get(k) ?? null);
}

/** The rows of each key (possibly none), in the keys' order; rows keep their order within a key. */
function groupByKey<V>(keys: readonly string[], rows: V[], keyOf: (row: V) => string): V[][] {
  const groups = new Map<string, V[]>(keys.map((k) => [k, []]));
  for (const r of rows) groups.get(keyOf(r))?.push(r);
  return keys.map((k) => groups.get(k)!);
}
