import { Args, Ctx, Query, Resolver } from 'type-graphql';
import type { Page } from '../../graphql/connection.js';
import { PageArgs } from '../jobs/job.resolver.js';
import type { GqlContext } from '../../graphql/context.js';
import { requireAnalyst, requireScope } from '../access.js';
import { AccountConnection, AccountType } from './account.graphql.js';

@Resolver()
export class AccountResolver {
  @Query(() => AccountType, { description: "The caller's own account" })
  async me(@Ctx() ctx: GqlContext): Promise<AccountType> {
    const principal = await ctx.principal();
    requireScope(principal, 'read');
    return ctx.services.accounts.view(principal.accountId);
  }

  @Query(() => AccountConnection, { description: 'Every account, newest first (admins and analysts)' })
  async accounts(@Ctx() ctx: GqlContext, @Args(() => PageArgs) { first, after }: PageArgs): Promise<Page<AccountType>> {
    const principal = await ctx.principal();
    requireScope(principal, 'read');
    requireAnalyst(principal);
    return ctx.services.accounts.list(first, after);
  }
}
