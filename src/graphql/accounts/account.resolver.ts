import { Args, ArgsType, Ctx, Field, FieldResolver, Query, Resolver, Root } from 'type-graphql';
import type { Page } from '../connection.js';
import { DateTime } from '../scalars.js';
import { PageArgs } from '../jobs/job.resolver.js';
import type { GqlContext } from '../context.js';
import { RequiresScope } from '../scopes.js';
import { apiKeyPolicy } from '../../modules/api-keys/api-key.policy.js';
import { creditPolicy } from '../../modules/credits/credit.policy.js';
import { ApiKeyType } from '../api-keys/api-key.graphql.js';
import { OperationUsageType } from '../credits/usage.graphql.js';
import { AccountConnection, AccountType } from './account.graphql.js';

@ArgsType()
class UsageWindowArgs {
  @Field(() => DateTime, { description: 'From this time (inclusive)' }) from!: Date;
  @Field(() => DateTime, { description: 'Until this time (exclusive); at most 400 days after from' }) to!: Date;
}

// `membership` and `credits` come with every account row (one joined query for `me`, `accounts`
// and the account loader), so they need no resolver of their own.
@Resolver(() => AccountType)
export class AccountResolver {
  @Query(() => AccountType, { description: "The caller's own account: membership and credits (read scope; no membership needed)" })
  @RequiresScope('read')
  async me(@Ctx() ctx: GqlContext): Promise<AccountType> {
    const principal = await ctx.principal();
    return ctx.services.accounts.view(principal, principal.accountId);
  }

  @Query(() => AccountConnection, { description: 'Every account, newest first (admins and analysts; FORBIDDEN for others)' })
  @RequiresScope('read')
  async accounts(@Ctx() ctx: GqlContext, @Args(() => PageArgs) { first, after }: PageArgs): Promise<Page<AccountType>> {
    const principal = await ctx.principal();
    return ctx.services.accounts.list(principal, first, after);
  }

  @FieldResolver(() => [ApiKeyType], {
    description: 'The account’s API keys, never their secrets (scope keys; another account’s for admins and analysts only)',
  })
  @RequiresScope('keys')
  async apiKeys(@Root() account: AccountType, @Ctx() ctx: GqlContext): Promise<ApiKeyType[]> {
    const principal = await ctx.principal();
    apiKeyPolicy.list(principal, account.id);
    return ctx.loaders.apiKeys.load(account.id);
  }

  @FieldResolver(() => [OperationUsageType], {
    description: 'Credits consumed (captured) per operation in the window (another account’s for admins and analysts only)',
  })
  @RequiresScope('read')
  async usage(
    @Root() account: AccountType,
    @Args(() => UsageWindowArgs) { from, to }: UsageWindowArgs,
    @Ctx() ctx: GqlContext,
  ): Promise<OperationUsageType[]> {
    const principal = await ctx.principal();
    creditPolicy.read(principal, account.id);
    return ctx.loaders.usage(from, to).load(account.id);
  }
}
