import { Arg, Args, ArgsType, Ctx, Field, ID, Int, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import type { Page } from '../../graphql/connection.js';
import { requireScope } from '../access.js';
import { JobConnection, JobType } from './job.graphql.js';
import { watchJob } from './job-updates.js';
import { toJobType } from './job.view.js';

/** Relay paging arguments. */
@ArgsType()
export class PageArgs {
  @Field(() => Int, { nullable: true, description: '1 to 100, default 20' }) first?: number | null;
  @Field(() => String, { nullable: true, description: 'The endCursor of the previous page' }) after?: string | null;
}

@Resolver()
export class JobResolver {
  @Query(() => JobType, { description: 'One of the caller’s jobs' })
  async job(@Arg('id', () => ID) id: string, @Ctx() ctx: GqlContext): Promise<JobType> {
    const principal = await ctx.principal();
    requireScope(principal, 'read');
    return toJobType(await ctx.services.jobs.get(principal.accountId, id));
  }

  @Mutation(() => JobType, { description: 'Cancel a queued or running job: its hold is released and nothing is charged. A finished job is returned as it is.' })
  async cancelJob(@Arg('id', () => ID) id: string, @Ctx() ctx: GqlContext): Promise<JobType> {
    const principal = await ctx.principal();
    requireScope(principal, 'read');
    return toJobType(await ctx.services.jobControl.cancel(principal.accountId, id));
  }

  @Subscription(() => JobType, {
    description: 'The job now, then each change of its status or progress, ending with its final state',
    subscribe: async ({ args, context }) => {
      const ctx = context as GqlContext;
      const principal = await ctx.principal();
      requireScope(principal, 'read');
      const updates = watchJob(ctx.services.jobs, principal.accountId, String(args.id));
      // The first read happens here, so an unknown id fails the subscription itself.
      const first = await updates.next();
      return (async function* () {
        if (!first.done) yield toJobType(first.value);
        for await (const job of updates) yield toJobType(job);
      })();
    },
  })
  jobUpdated(@Root() job: JobType, @Arg('id', () => ID) _id: string): JobType {
    return job;
  }

  @Query(() => JobConnection, { description: 'The caller’s jobs, newest first' })
  async jobs(@Ctx() ctx: GqlContext, @Args(() => PageArgs) { first, after }: PageArgs): Promise<Page<JobType>> {
    const principal = await ctx.principal();
    requireScope(principal, 'read');
    const page = await ctx.services.jobs.list(principal.accountId, first, after);
    return { ...page, edges: page.edges.map((e) => ({ cursor: e.cursor, node: toJobType(e.node) })) };
  }
}
