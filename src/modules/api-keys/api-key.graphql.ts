import { Field, ID, ObjectType } from 'type-graphql';
import { DateTime } from '../../graphql/scalars.js';

@ObjectType('ApiKey', { description: 'An API key. The secret is never shown again after creation.' })
export class ApiKeyType {
  @Field(() => ID) id!: string;
  @Field() name!: string;
  @Field({ description: 'The last four characters of the key, to tell keys apart' }) last4!: string;
  @Field(() => [String]) scopes!: string[];
  @Field(() => DateTime) createdAt!: Date;
  @Field(() => DateTime, { nullable: true }) lastUsedAt!: Date | null;
  @Field(() => DateTime, { nullable: true }) revokedAt!: Date | null;
}

@ObjectType()
export class CreatedApiKey {
  @Field({ description: 'The full secret key: shown this once only' }) key!: string;
  @Field(() => ApiKeyType) apiKey!: ApiKeyType;
}
