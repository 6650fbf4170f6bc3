import { Arg, Ctx, Mutation, Resolver } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import { ParseInput, ParseResultType } from './parse.graphql.js';

@Resolver()
export class ParseResolver {
  @Mutation(() => ParseResultType, { description: 'Resolve a public video-page URL into direct media (the same as POST /api/parse).' })
  async parse(@Arg('input', () => ParseInput) input: ParseInput, @Ctx() ctx: GqlContext): Promise<ParseResultType> {
    return ctx.services.parse.parse(await ctx.principal(), { ...input });
  }
}
