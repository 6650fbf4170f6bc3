import { createPubSub } from '@graphql-yoga/subscription';
import { buildSchema } from 'type-graphql';
import type { GraphQLSchema } from 'graphql';
import { AccountResolver } from '../modules/accounts/account.resolver.js';
import { ApiKeyResolver } from '../modules/api-keys/api-key.resolver.js';
import { CreditResolver } from '../modules/credits/credit.resolver.js';
import { JobResolver } from '../modules/jobs/job.resolver.js';
import { ParseResolver } from '../modules/parse/parse.resolver.js';
import { TranscriptionResolver } from '../modules/transcription/transcription.resolver.js';
import { JobWebhookResolver, WebhookSecretResolver } from '../modules/webhooks/webhook.resolver.js';

let cached: Promise<GraphQLSchema> | undefined;

/** The executable schema (built once per process: type-graphql's metadata is global). */
export function buildGraphqlSchema(): Promise<GraphQLSchema> {
  cached ??= buildSchema({
    resolvers: [AccountResolver, ApiKeyResolver, CreditResolver, JobResolver, JobWebhookResolver, ParseResolver, TranscriptionResolver, WebhookSecretResolver],
    // Inputs are validated by the services, identically for both doors.
    validate: false,
    // jobUpdated reads the job rows itself (so it sees every instance's work); type-graphql still
    // wants a PubSub for topic-based subscriptions, of which there are none yet.
    pubSub: createPubSub(),
  });
  return cached;
}
