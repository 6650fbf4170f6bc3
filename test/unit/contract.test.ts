import {
  getNullableType,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
} from 'graphql';
import { z } from 'zod';
import { RESOLVERS } from '../../src/graphql/resolvers.js';
import { buildGraphqlSchema } from '../../src/graphql/schema.js';
import {
  coverSchema,
  creditsSchema,
  jobBodySchema,
  mediaFormatSchema,
  metadataSchema,
  parseItemSchema,
  parseResponseSchema,
  transcriptionResponseSchema,
  transcriptSegmentSchema,
  transcriptWordSchema,
  webhookAttemptSchema,
} from '../../src/types/contract/index.js';

/**
 * One contract: the REST bodies are the zod schemas of src/types/contract/ (from which the OpenAPI
 * document and the REST serializer are made), and GraphQL's object types must say the same, field by
 * field: the same names, the same nullability, the same kind of value. A field only one door has is
 * named here with the reason.
 */

/** GraphQL's types and the contract's schemas for the same thing, with what only GraphQL has. */
const PAIRS: { graphql: string; schema: z.ZodObject; graphqlOnly?: Record<string, string> }[] = [
  { graphql: 'ParseResult', schema: parseResponseSchema as z.ZodObject },
  { graphql: 'MediaFormat', schema: mediaFormatSchema as z.ZodObject },
  { graphql: 'ParseItem', schema: parseItemSchema as z.ZodObject },
  { graphql: 'CoverImage', schema: coverSchema as z.ZodObject },
  { graphql: 'MediaMetadata', schema: metadataSchema },
  { graphql: 'CreditCharge', schema: creditsSchema as z.ZodObject },
  {
    graphql: 'Transcription',
    schema: transcriptionResponseSchema as z.ZodObject,
    graphqlOnly: { srt: 'REST serves it as ?format=srt', vtt: 'REST serves it as ?format=vtt' },
  },
  { graphql: 'TranscriptSegment', schema: transcriptSegmentSchema },
  { graphql: 'TranscriptWord', schema: transcriptWordSchema },
  {
    graphql: 'Job',
    schema: jobBodySchema as z.ZodObject,
    graphqlOnly: {
      account: 'the owning account, a graph edge (REST names the caller’s own)',
      creditEntries: 'the ledger entries, a graph edge (REST: GET /api/credit-history.csv)',
    },
  },
  { graphql: 'WebhookAttempt', schema: webhookAttemptSchema as z.ZodObject },
];

/** What a zod schema's values are, in GraphQL's terms: nullable or not, list or not, and the kind of leaf. */
interface Shape {
  nullable: boolean;
  list: boolean;
  leaf: 'string' | 'int' | 'float' | 'boolean' | 'object' | 'json';
}

function zodShape(schema: z.ZodType): Shape {
  let s: z.ZodType = schema;
  let nullable = false;
  for (;;) {
    if (s instanceof z.ZodNullable || s instanceof z.ZodOptional) {
      nullable = true;
      s = s.unwrap() as z.ZodType;
    } else break;
  }
  if (s instanceof z.ZodArray) return { nullable, list: true, leaf: zodShape(s.element as z.ZodType).leaf };
  const def = s._zod.def as { type: string; format?: string; check?: string };
  switch (def.type) {
    case 'string':
    case 'enum':
    case 'literal':
      return { nullable, list: false, leaf: 'string' };
    case 'number':
      return { nullable, list: false, leaf: def.format === 'safeint' || def.check === 'number_format' ? 'int' : 'float' };
    case 'boolean':
      return { nullable, list: false, leaf: 'boolean' };
    case 'record':
      return { nullable, list: false, leaf: 'json' };
    case 'object':
      return { nullable, list: false, leaf: 'object' };
    default:
      throw new Error(`no GraphQL counterpart known for zod's ${def.type}`);
  }
}

function graphqlShape(type: GraphQLOutputType): Shape {
  const nullable = !isNonNullType(type);
  const inner = getNullableType(type);
  if (isListType(inner)) return { nullable, list: true, leaf: graphqlShape(inner.ofType).leaf };
  if (isObjectType(inner)) return { nullable, list: false, leaf: 'object' };
  if (isEnumType(inner)) return { nullable, list: false, leaf: 'string' };
  if (!isScalarType(inner)) throw new Error(`unexpected GraphQL type ${String(inner)}`);
  const leaf = (
    {
      String: 'string',
      ID: 'string',
      DateTime: 'string',
      Int: 'int',
      SafeInt: 'int',
      Credits: 'int',
      Float: 'float',
      Boolean: 'boolean',
      JSONObject: 'json',
    } as Record<string, Shape['leaf']>
  )[inner.name];
  if (!leaf) throw new Error(`unknown scalar ${inner.name}`);
  return { nullable, list: false, leaf };
}

const isInt = (schema: z.ZodType) => zodShape(schema).leaf === 'int';

describe('one contract: GraphQL says what the REST bodies say, field by field', () => {
  let schema: GraphQLSchema;
  beforeAll(async () => {
    schema = await buildGraphqlSchema([...RESOLVERS]);
  });

  it.each(PAIRS)('$graphql', ({ graphql, schema: body, graphqlOnly = {} }) => {
    const type = schema.getType(graphql) as GraphQLObjectType;
    expect(type).toBeDefined();
    const fields = type.getFields();
    const problems: string[] = [];
    for (const [name, zodField] of Object.entries(body.shape)) {
      const field: GraphQLField<unknown, unknown> | undefined = fields[name];
      if (!field) {
        problems.push(`${name}: in the REST body, not in GraphQL`);
        continue;
      }
      const want = zodShape(zodField as z.ZodType);
      const got = graphqlShape(field.type);
      // Whole numbers: GraphQL's Int and its Credits scalar are both whole; an integer the contract
      // declares must not be a Float in GraphQL, and the other way round.
      if (want.nullable !== got.nullable) problems.push(`${name}: nullable ${want.nullable} in REST, ${got.nullable} in GraphQL`);
      if (want.list !== got.list) problems.push(`${name}: list ${want.list} in REST, ${got.list} in GraphQL`);
      if (want.leaf !== got.leaf) problems.push(`${name}: ${want.leaf} in REST, ${got.leaf} in GraphQL`);
    }
    for (const name of Object.keys(fields)) {
      if (!(name in body.shape) && !(name in graphqlOnly)) problems.push(`${name}: in GraphQL, not in the REST body`);
    }
    expect(problems).toEqual([]);
  });

  it('tells the kinds apart, so it can fail', () => {
    expect(zodShape(z.int().nullable())).toEqual({ nullable: true, list: false, leaf: 'int' });
    expect(isInt(z.number())).toBe(false);
    expect(zodShape(z.array(z.string()))).toEqual({ nullable: false, list: true, leaf: 'string' });
    expect(zodShape(z.record(z.string(), z.string()).nullable())).toEqual({ nullable: true, list: false, leaf: 'json' });
  });
});
