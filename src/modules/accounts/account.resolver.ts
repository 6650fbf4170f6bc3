import { Ctx, Query, Resolver } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import { requireScope } from '../access.js';
import { AccountType } from './account.graphql.js';

@Resolver()
export class AccountResolver {
  @Query(() => AccountType, { description: "The caller's own account" })
  async me(@Ctx() ctx: GqlContext): Promise<AccountType> {
    const principal = await ctx.principal();
    requireScope(principal, 'read');
    return ctx.services.accounts.view(principal.accountId);
  }
}
