import { Args, ArgsType, Ctx, Field, Mutation, Resolver } from 'type-graphql';
import type { GqlContext } from '../context.js';
import { RequiresScope } from '../scopes.js';
import { ParseInput, ParseResultType } from './parse.graphql.js';

@ArgsType()
class ParseInputArgs {
  @Field(() => ParseInput, { description: 'What to parse, and how' }) input!: ParseInput;
  @Field(() => String, {
    nullable: true,
    description: 'The same key with the same input within 24 h replays the first result and charges once',
  })
  idempotencyKey?: string | null;
}

@Resolver()
export class ParseResolver {
  @Mutation(() => ParseResultType, {
    description:
      'Resolve a public video-page URL into direct media (the same as POST /api/parse). Needs the parse scope, and with an API key an active membership (MEMBERSHIP_REQUIRED). Holds the price (default 1 credit; INSUFFICIENT_CREDITS), charges it on success, releases it on failure. Errors: INVALID_INPUT, URL_NOT_ALLOWED, NO_MEDIA_FOUND, CONTENT_UNAVAILABLE, PROVIDER_ERROR, PROVIDER_UNAVAILABLE, PROVIDER_TIMEOUT, IDEMPOTENCY_KEY_IN_USE, IDEMPOTENCY_KEY_REUSED.',
  })
  @RequiresScope('parse')
  parse(@Args(() => ParseInputArgs) args: ParseInputArgs, @Ctx() ctx: GqlContext): Promise<ParseResultType> {
    return resolveParse(args, ctx);
  }
}

/**
 * The parse mutation: what type-graphql runs for ParseResolver.parse, and what the built schema runs
 * directly (graphql/schema.ts), with graphql-js's coerced arguments, which are all it needs.
 */
export async function resolveParse(
  { input, idempotencyKey }: { input: ParseInput; idempotencyKey?: string | null },
  ctx: GqlContext,
): Promise<ParseResultType> {
  // Every format of the answer has its delivery (the service sets it, on replays of older answers too).
  return (await ctx.services.parse.parse(await ctx.principal(), { ...input }, { idempotencyKey })) as ParseResultType;
}
