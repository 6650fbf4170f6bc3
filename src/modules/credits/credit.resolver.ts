import { Arg, Ctx, ID, Int, Query, Resolver } from 'type-graphql';
import { AppError } from '../../errors.js';
import type { GqlContext } from '../../graphql/context.js';
import type { Page } from '../../graphql/connection.js';
import { DateTime } from '../../graphql/scalars.js';
import { requireScope } from '../access.js';
import type { CreditEntry } from './credit-entry.entity.js';
import { CreditEntryConnection, CreditEntryKindEnum, CreditEntryType } from './credit.graphql.js';

@Resolver()
export class CreditResolver {
  @Query(() => CreditEntryConnection, { description: 'Ledger entries, newest first; accountId defaults to the caller’s own' })
  async creditHistory(
    @Ctx() ctx: GqlContext,
    @Arg('accountId', () => ID, { nullable: true }) accountId?: string | null,
    @Arg('from', () => DateTime, { nullable: true }) from?: Date | null,
    @Arg('to', () => DateTime, { nullable: true }) to?: Date | null,
    @Arg('kinds', () => [CreditEntryKindEnum], { nullable: true }) kinds?: CreditEntryKindEnum[] | null,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
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
  return { ...e, id: String(e.id), kind: e.kind as CreditEntryKindEnum };
}
