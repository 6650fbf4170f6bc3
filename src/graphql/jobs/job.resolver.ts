import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Int, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import type { GqlContext } from '../context.js';
import type { Page } from '../connection.js';
import { AppError } from '../../errors.js';
import { RequiresScope } from '../scopes.js';
import { accountPolicy } from '../../modules/accounts/account.policy.js';
import { AccountType } from '../accounts/account.graphql.js';
import type { Job } from '../../modules/jobs/job.entity.js';
import { JobConnection, JobType } from './job.graphql.js';
import { toJobType } from '../../modules/jobs/job.view.js';

/** Relay paging arguments. */
@ArgsType()
export class PageArgs {
  @Field(() => Int, { nullable: true, description: '1 to 100, default 20' }) first?: number | null;
  @Field(() => String, { nullable: true, description: 'The endCursor of the previous page' }) after?: string | null;
}

/** A Job as the resolvers hand it on: its public view, plus the owner that `account` follows (not a field itself). */
export type JobRoot = JobType & { accountId?: string };

export function toJobRoot(job: Job): JobRoot {
  return { ...toJobType(job), accountId: job.accountId };
}

@Resolver(() => JobType)
export class JobResolver {
  @Query(() => JobType, { description: 'One of the caller’s jobs (read scope). NOT_FOUND for an unknown id or another account’s job.' })
  @RequiresScope('read')
  async job(@Arg('id', () => ID, { description: 'The job id' }) id: string, @Ctx() ctx: GqlContext): Promise<JobType> {
    const principal = await ctx.principal();
    return toJobRoot(await ctx.services.jobs.forCaller(principal, id));
  }

  @Mutation(() => JobType, {
    description:
      'Cancel a queued or running job (transcribe scope, the one that starts jobs): its hold is released and nothing is charged. A finished job is returned as it is. NOT_FOUND for an unknown id or another account’s job. The same as POST /api/jobs/{id}/cancel.',
  })
  @RequiresScope('transcribe')
  async cancelJob(@Arg('id', () => ID, { description: 'The job to cancel' }) id: string, @Ctx() ctx: GqlContext): Promise<JobType> {
    const principal = await ctx.principal();
    return toJobRoot(await ctx.services.jobs.cancel(principal, id));
  }

  @Subscription(() => JobType, {
    description:
      'The job now, then each change of its status or progress, ending with its final state (read scope; graphql-ws). NOT_FOUND ends it at once for an unknown id.',
    subscribe: async ({ args, context }) => {
      const ctx = context as GqlContext;
      const principal = await ctx.principal();
      // The first read happens here, so an unknown id fails the subscription itself.
      return ctx.services.jobUpdates.watch(principal, String(args.id));
    },
  })
  @RequiresScope('read')
  jobUpdated(@Root() job: Job, @Arg('id', () => ID, { description: 'The job to follow' }) _id: string): JobType {
    return toJobRoot(job);
  }

  @Query(() => JobConnection, { description: 'The caller’s jobs, newest first (read scope)' })
  @RequiresScope('read')
  async jobs(@Ctx() ctx: GqlContext, @Args(() => PageArgs) { first, after }: PageArgs): Promise<Page<JobType>> {
    const principal = await ctx.principal();
    const page = await ctx.services.jobs.list(principal, first, after);
    return { ...page, edges: page.edges.map((e) => ({ cursor: e.cursor, node: toJobRoot(e.node) })) };
  }

  // Nullable: a refusal (FORBIDDEN) leaves the rest of the job in the answer, startTranscription's id first.
  @FieldResolver(() => AccountType, {
    nullable: true,
    description:
      'The account the job belongs to (read scope; another account’s only for admins and analysts). Null, with FORBIDDEN in errors, when refused.',
  })
  @RequiresScope('read')
  async account(@Root() job: JobRoot, @Ctx() ctx: GqlContext): Promise<AccountType> {
    // A job handed on without its owner (startTranscription's) finds it through the job loader.
    const accountId = job.accountId ?? (await ctx.loaders.job.load(job.id))?.accountId;
    if (!accountId) throw new AppError('NOT_FOUND', 'No such job.');
    accountPolicy.read(await ctx.principal(), accountId);
    const account = await ctx.loaders.account.load(accountId);
    if (!account) throw new AppError('NOT_FOUND', 'No such account.');
    return account;
  }
}
