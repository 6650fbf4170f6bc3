import { Args, ArgsType, Ctx, Field, ID, Int, Query, Resolver } from 'type-graphql';
import { AppError } from '../../errors.js';
import type { GqlContext } from '../../graphql/context.js';
import type { Page } from '../../graphql/connection.js';
import { DateTime } from '../../graphql/scalars.js';
import { requireScope } from '../access.js';
import type { CreditEntry, CreditEntryKind } from './credit-entry.entity.js';
import { CreditEntryConnection, CreditEntryKindEnum, CreditEntryType } from './credit.graphql.js';

@ArgsType()
class CreditHistoryArgs {
  @Field(() => ID, { nullable: true, description: 'Defaults to the caller’s own account' }) accountId?: string | null;
  @Field(() => DateTime, { nullable: true, description: 'Entries at or after this time' }) from?: Date | null;
  @Field(() => DateTime, { nullable: true, description: 'Entries before this time' }) to?: Date | null;
  @Field(() => [CreditEntryKindEnum], { nullable: true }) kinds?: CreditEntryKind[] | null;
  @Field(() => Int, { nullable: true, description: '1 to 100, default 20' }) first?: number | null;
  @Field(() => String, { nullable: true }) after?: string | null;
}

@Resolver()
export class CreditResolver {
  @Query(() => CreditEntryConnection, { description: 'Ledger entries, newest first; accountId defaults to the caller’s own' })
  async creditHistory(
    @Ctx() ctx: GqlContext,
    @Args(() => CreditHistoryArgs) { accountId, from, to, kinds, first, after }: CreditHistoryArgs,
  ): Promise<Page<CreditEntryType>> {
    const principal = await ctx.principal();
    requireScope(principal, 'read');
    if (accountId && accountId !== principal.accountId) {
      throw new AppError('FORBIDDEN', 'Only analysts may read other accounts’ credit history.');
    }
    const page = await ctx.services.history.list({ accountId: principal.accountId, from, to, kinds, first, after });
    return { ...page, edges: page.edges.map((e) => ({ cursor: e.cursor, node: toEntryType(e.node) })) };
  }
}

function toEntryType(e: CreditEntry): CreditEntryType {
  return { ...e, id: String(e.id) };
}
