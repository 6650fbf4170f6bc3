import { Field, ID, ObjectType } from 'type-graphql';
import { DateTime } from '../scalars.js';
import { InheritsScope } from '../scopes.js';

@ObjectType('ApiKey', { simpleResolvers: true, description: 'An API key. The secret is never shown again after creation.' })
export class ApiKeyType {
  @Field(() => ID, { description: 'The key’s id (what revokeApiKey takes; not the secret)' }) id!: string;
  @Field({ description: 'The label given at creation' }) name!: string;
  @Field({ description: 'The last four characters of the key, to tell keys apart' }) last4!: string;
  @Field(() => [String], {
    description:
      'What the key may do: parse, transcribe (start and cancel jobs), read (accounts, jobs, history, a job’s account and webhook), keys (keys and the webhook secret)',
  })
  scopes!: string[];
  @Field(() => DateTime, { description: 'When the key was created' }) createdAt!: Date;
  @Field(() => DateTime, { nullable: true, description: 'When the key was last used, to the minute; null if never' })
  lastUsedAt!: Date | null;
  @Field(() => DateTime, { nullable: true, description: 'When the key was revoked; null while it works' }) revokedAt!: Date | null;
}

@ObjectType({ simpleResolvers: true, description: 'A new key: the secret, once, and the key’s record' })
export class CreatedApiKey {
  @Field({ description: 'The full secret key (mg_live_…): shown this once only; send it as Authorization: Bearer <key>' }) key!: string;
  @Field(() => ApiKeyType, { description: 'The key as apiKeys lists it from now on' })
  @InheritsScope()
  apiKey!: ApiKeyType;
}
