import { createPubSub } from '@graphql-yoga/subscription';
import { type BuildSchemaOptions, buildSchema } from 'type-graphql';

/** The resolver classes the schema is built from, as type-graphql's buildSchema takes them. */
export type ResolverClasses = BuildSchemaOptions['resolvers'];
import type { GraphQLSchema } from 'graphql';
import { resolveParse } from './parse/parse.resolver.js';
import { enforceScopes } from './scopes.js';

let cached: Promise<GraphQLSchema> | undefined;

/** type-graphql has no option for the root types' descriptions: they are set on the built schema. */
const ROOT_DESCRIPTIONS = {
  Query:
    'Reads. Authenticate with Authorization: Bearer <API key> (or a frontend’s OpenID Connect token); errors carry their code in extensions.code (UNAUTHENTICATED, FORBIDDEN, NOT_FOUND, …).',
  Mutation:
    'The operations (parse, transcribe: they hold, charge and release credits) and changes to the caller’s keys, jobs and webhook secret.',
  Subscription: 'Live updates over the graphql-ws protocol on /graphql.',
};

/**
 * type-graphql calls every resolver through its own pipeline (the parameters sorted, an async
 * validation per argument, the input remade as class instances), validation and middlewares off or
 * not. The parse mutation, the hot path of this door, is resolved directly instead: graphql-js's
 * coerced arguments are all it needs (measured: 2.8 KB of the 10 KB a GraphQL parse allocated beyond a
 * REST one). Object types' fields need nothing of the kind: they declare simpleResolvers.
 */
function resolveHotFieldsDirectly(schema: GraphQLSchema): GraphQLSchema {
  const parse = schema.getMutationType()?.getFields().parse;
  if (!parse) throw new Error('the schema has no parse mutation');
  parse.resolve = (_root, args, ctx) => resolveParse(args as Parameters<typeof resolveParse>[0], ctx);
  return schema;
}

function describeRoots(schema: GraphQLSchema): GraphQLSchema {
  for (const type of [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]) {
    if (type) type.description = ROOT_DESCRIPTIONS[type.name as keyof typeof ROOT_DESCRIPTIONS];
  }
  return schema;
}

/** The executable schema of these resolvers (built once per process: type-graphql's metadata is global). */
export function buildGraphqlSchema(resolvers: ResolverClasses): Promise<GraphQLSchema> {
  cached ??= buildSchema({
    resolvers,
    // Inputs are validated by the services, identically for both doors.
    validate: false,
    // jobUpdated reads the job rows itself (so it sees every instance's work); type-graphql still
    // wants a PubSub for topic-based subscriptions, of which there are none yet.
    pubSub: createPubSub(),
  })
    .then(describeRoots)
    .then(resolveHotFieldsDirectly)
    // Last: it guards the resolvers as they finally are, the direct parse included.
    .then(enforceScopes);
  return cached;
}
