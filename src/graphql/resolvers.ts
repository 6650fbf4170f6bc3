import { AccountResolver } from './accounts/account.resolver.js';
import { ApiKeyResolver } from './api-keys/api-key.resolver.js';
import { CreditResolver, JobCreditsResolver } from './credits/credit.resolver.js';
import { JobResolver } from './jobs/job.resolver.js';
import { ParseResolver } from './parse/parse.resolver.js';
import { TranscriptionResolver } from './transcription/transcription.resolver.js';
import { JobWebhookResolver, WebhookSecretResolver } from './webhooks/webhook.resolver.js';

/** Every resolver of the GraphQL door, one per feature (the composition root hands the list to the schema). */
export const RESOLVERS = [
  AccountResolver,
  ApiKeyResolver,
  CreditResolver,
  JobCreditsResolver,
  JobResolver,
  JobWebhookResolver,
  ParseResolver,
  TranscriptionResolver,
  WebhookSecretResolver,
] as const;
