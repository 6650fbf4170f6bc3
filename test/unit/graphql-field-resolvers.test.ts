import { isObjectType, type GraphQLSchema } from 'graphql';
import { RESOLVERS } from '../../src/graphql/resolvers.js';
import { buildGraphqlSchema } from '../../src/graphql/schema.js';

/**
 * Object types declare `simpleResolvers`: their fields are read as plain properties (graphql-jit
 * compiles them to a property read) instead of through type-graphql's wrapper, one call and one
 * object per field per answer. Only the fields a resolver class computes (@FieldResolver) and the
 * root operations have a resolve function of their own.
 */
function fieldsWithResolvers(schema: GraphQLSchema): string[] {
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].map((t) => t?.name));
  const found: string[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__') || roots.has(type.name)) continue;
    for (const field of Object.values(type.getFields())) if (field.resolve) found.push(`${type.name}.${field.name}`);
  }
  return found.sort();
}

/** The fields a @FieldResolver computes (in the modules' resolver classes). */
const COMPUTED = [
  'Account.apiKeys',
  'Account.usage',
  'CreditEntry.job',
  'Job.account',
  'Job.creditEntries',
  'Job.webhook',
  'Transcription.srt',
  'Transcription.vtt',
];

describe('GraphQL fields without a resolver of their own are plain property reads', () => {
  it('has a resolve function only on the fields a @FieldResolver computes', async () => {
    expect(fieldsWithResolvers(await buildGraphqlSchema([...RESOLVERS]))).toEqual(COMPUTED);
  });
});
