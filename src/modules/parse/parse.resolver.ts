import { Args, ArgsType, Ctx, Field, Mutation, Resolver } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import { ParseInput, ParseResultType } from './parse.graphql.js';

@ArgsType()
class ParseInputArgs {
  @Field(() => ParseInput) input!: ParseInput;
  @Field(() => String, { nullable: true, description: 'The same key with the same input within 24 h replays the first result and charges once' })
  idempotencyKey?: string | null;
}

@Resolver()
export class ParseResolver {
  @Mutation(() => ParseResultType, { description: 'Resolve a public video-page URL into direct media (the same as POST /api/parse).' })
  async parse(@Args(() => ParseInputArgs) { input, idempotencyKey }: ParseInputArgs, @Ctx() ctx: GqlContext): Promise<ParseResultType> {
    return ctx.services.parse.parse(await ctx.principal(), { ...input }, { idempotencyKey });
  }
}
