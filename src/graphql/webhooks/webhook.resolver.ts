import { Ctx, FieldResolver, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { GqlContext } from '../context.js';
import { RequiresScope } from '../scopes.js';
import { JobType } from '../jobs/job.graphql.js';
import { JobWebhookType, WebhookSecretType } from './webhook.graphql.js';

@Resolver()
export class WebhookSecretResolver {
  @Query(() => WebhookSecretType, {
    description: 'The secret your webhook receiver verifies deliveries with (made on first read; keys scope)',
  })
  @RequiresScope('keys')
  async webhookSecret(@Ctx() ctx: GqlContext): Promise<WebhookSecretType> {
    return ctx.services.webhooks.secretFor(await ctx.principal());
  }

  @Mutation(() => WebhookSecretType, {
    description: 'Replace the signing secret (keys scope); deliveries from now on, retries included, are signed with the new one',
  })
  @RequiresScope('keys')
  async rotateWebhookSecret(@Ctx() ctx: GqlContext): Promise<WebhookSecretType> {
    return ctx.services.webhooks.rotateSecret(await ctx.principal());
  }
}

@Resolver(() => JobType)
export class JobWebhookResolver {
  @FieldResolver(() => JobWebhookType, {
    nullable: true,
    description:
      'The job’s webhook and its delivery attempts (read scope); null without a webhookUrl, or with FORBIDDEN in errors when refused',
  })
  @RequiresScope('read')
  async webhook(@Root() job: JobType, @Ctx() ctx: GqlContext): Promise<JobWebhookType | null> {
    const url = job.input.webhookUrl;
    if (typeof url !== 'string') return null;
    return { url, attempts: await ctx.loaders.webhookAttempts.load(job.id) };
  }
}
