import { Args, ArgsType, Ctx, Field, FieldResolver, ID, Int, Query, Resolver, Root } from 'type-graphql';
import type { GqlContext } from '../context.js';
import type { Page } from '../connection.js';
import { DateTime } from '../scalars.js';
import { InheritsScope, RequiresScope } from '../scopes.js';
import { JobType } from '../jobs/job.graphql.js';
import { PageArgs, toJobRoot, type JobRoot } from '../jobs/job.resolver.js';
import type { UsageDimension, UsageGrouping } from '../../modules/credits/credit-usage.repository.js';
import { UsageBucketType, UsageDimensionEnum, UsageGroupingEnum } from './usage.graphql.js';
import type { CreditEntry, CreditEntryKind } from '../../modules/credits/credit-entry.entity.js';
import { CreditEntryConnection, CreditEntryKindEnum, CreditEntryType } from './credit.graphql.js';
import { CreditHistoryRowConnection, type CreditHistoryRowType } from './task-history.graphql.js';

@ArgsType()
class CreditHistoryArgs {
  @Field(() => ID, {
    nullable: true,
    description: 'Another account’s history (admins and analysts; FORBIDDEN for others); default the caller’s own',
  })
  accountId?: string | null;
  @Field(() => DateTime, { nullable: true, description: 'Entries at or after this time' }) from?: Date | null;
  @Field(() => DateTime, { nullable: true, description: 'Entries before this time' }) to?: Date | null;
  @Field(() => [CreditEntryKindEnum], { nullable: true, description: 'Only entries of these kinds; default all' }) kinds?:
    | CreditEntryKind[]
    | null;
  @Field(() => Int, { nullable: true, description: '1 to 100, default 20' }) first?: number | null;
  @Field(() => String, { nullable: true, description: 'The endCursor of the previous page' }) after?: string | null;
}

@ArgsType()
class CreditUsageArgs {
  @Field(() => DateTime, { description: 'From this time (inclusive)' }) from!: Date;
  @Field(() => DateTime, { description: 'Until this time (exclusive); after from and at most 400 days after it (INVALID_INPUT otherwise)' })
  to!: Date;
  @Field(() => UsageGroupingEnum, { nullable: true, description: 'The period of a bucket; default DAY' }) groupBy?: UsageGrouping | null;
  @Field(() => UsageDimensionEnum, { nullable: true, description: 'What a bucket’s key tells apart; default OPERATION' })
  by?: UsageDimension | null;
}

@Resolver(() => CreditEntryType)
export class CreditResolver {
  @Query(() => [UsageBucketType], {
    description:
      'Credits consumed (captured) per period and operation or account (read scope); analysts see every account, others their own',
  })
  @RequiresScope('read')
  async creditUsage(
    @Ctx() ctx: GqlContext,
    @Args(() => CreditUsageArgs) { from, to, groupBy, by }: CreditUsageArgs,
  ): Promise<UsageBucketType[]> {
    const principal = await ctx.principal();
    return ctx.services.creditHistory.usage(principal, { from, to, groupBy: groupBy ?? 'DAY', by: by ?? 'OPERATION' });
  }

  @Query(() => CreditEntryConnection, {
    description:
      'Ledger entries, newest first (read scope); accountId defaults to the caller’s own. The same as GET /api/credit-history.csv.',
  })
  @RequiresScope('read')
  async creditHistory(
    @Ctx() ctx: GqlContext,
    @Args(() => CreditHistoryArgs) { accountId, from, to, kinds, first, after }: CreditHistoryArgs,
  ): Promise<Page<CreditEntryType>> {
    const principal = await ctx.principal();
    const page = await ctx.services.creditHistory.list(principal, { accountId, from, to, kinds, first, after });
    return { ...page, edges: page.edges.map((e) => ({ cursor: e.cursor, node: toEntryType(e.node) })) };
  }

  @Query(() => CreditHistoryRowConnection, {
    description:
      'The caller’s credit history read per task, newest first (read scope): one row per job with what it charged, and one per entry of no task (grants, adjustments, expiries). The entries themselves stay in creditHistory and the CSV.',
  })
  @RequiresScope('read')
  async creditHistoryByTask(@Ctx() ctx: GqlContext, @Args(() => PageArgs) { first, after }: PageArgs): Promise<Page<CreditHistoryRowType>> {
    const principal = await ctx.principal();
    const page = await ctx.services.creditHistory.byTask(principal, first, after);
    return {
      ...page,
      edges: page.edges.map(({ cursor, node: { job, entry } }) => ({
        cursor,
        node: job
          ? { id: job.id, createdAt: job.createdAt, job: toJobRoot(job), entry: null }
          : { id: String(entry.id), createdAt: entry.createdAt, job: null, entry: toEntryType(entry) },
      })),
    };
  }

  // The entry's own job: history already needed read, and analysts' reach across accounts.
  @FieldResolver(() => JobType, { nullable: true, description: 'The task the entry belongs to; null for grants and adjustments' })
  @InheritsScope()
  async job(@Root() entry: CreditEntryType, @Ctx() ctx: GqlContext): Promise<JobRoot | null> {
    if (!entry.jobId) return null;
    const job = await ctx.loaders.job.load(entry.jobId);
    return job && toJobRoot(job);
  }
}

function toEntryType(e: CreditEntry): CreditEntryType {
  return { ...e, id: String(e.id) };
}

@Resolver(() => JobType)
export class JobCreditsResolver {
  @FieldResolver(() => [CreditEntryType], {
    description:
      'The job’s ledger entries, oldest first: its hold (and any raise of it once the media’s length was known), then the capture or the release',
  })
  @RequiresScope('read')
  async creditEntries(@Root() job: JobType, @Ctx() ctx: GqlContext): Promise<CreditEntryType[]> {
    return (await ctx.loaders.creditEntries.load(job.id)).map(toEntryType);
  }
}
