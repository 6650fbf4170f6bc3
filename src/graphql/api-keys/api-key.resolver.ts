import { Arg, Args, ArgsType, Ctx, Field, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { GqlContext } from '../context.js';
import { RequiresScope } from '../scopes.js';
import { ApiKeyType, CreatedApiKey } from './api-key.graphql.js';

@ArgsType()
class CreateApiKeyArgs {
  @Field(() => String, { nullable: true, description: 'A label, 1 to 100 characters; default "default"' }) name?: string | null;
  @Field(() => [String], { nullable: true, description: 'parse, transcribe, read, keys; default: those of the calling key' }) scopes?:
    | string[]
    | null;
}

@Resolver()
export class ApiKeyResolver {
  @Query(() => [ApiKeyType], { description: "The caller's API keys, oldest first, revoked ones included (keys scope)" })
  @RequiresScope('keys')
  async apiKeys(@Ctx() ctx: GqlContext): Promise<ApiKeyType[]> {
    const principal = await ctx.principal();
    return ctx.services.apiKeys.list(principal, principal.accountId);
  }

  @Mutation(() => CreatedApiKey, {
    description:
      'Create a key for the caller’s account; `key` is shown this once only (keys scope). A key cannot create one with scopes it lacks itself (FORBIDDEN); a bad name or unknown scope is INVALID_INPUT.',
  })
  @RequiresScope('keys')
  async createApiKey(@Ctx() ctx: GqlContext, @Args(() => CreateApiKeyArgs) { name, scopes }: CreateApiKeyArgs): Promise<CreatedApiKey> {
    const principal = await ctx.principal();
    return ctx.services.apiKeys.create(principal, principal.accountId, name, scopes);
  }

  @Mutation(() => ApiKeyType, {
    description:
      'Revoke one of the caller’s keys (keys scope); it stops working on the next request, on every instance. Revoking twice is harmless; NOT_FOUND for an unknown id.',
  })
  @RequiresScope('keys')
  async revokeApiKey(
    @Arg('id', () => ID, { description: 'The key’s id (ApiKey.id), not its secret' }) id: string,
    @Ctx() ctx: GqlContext,
  ): Promise<ApiKeyType> {
    const principal = await ctx.principal();
    return ctx.services.apiKeys.revoke(principal, id);
  }
}
