import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { GraphQLObjectType } from 'graphql';
import { renderConfigurationDoc } from '../../src/docs/configuration-doc.js';
import { renderSchemaFiles } from '../../src/docs/schema-files.js';
import { RESOLVERS } from '../../src/graphql/resolvers.js';
import { buildGraphqlSchema } from '../../src/graphql/schema.js';

describe('committed schema files', () => {
  it.each(['schema.graphql', 'openapi.yaml'] as const)(
    '%s matches the code (run `npm run schema:write` after changing the API)',
    async (name) => {
      const files = await renderSchemaFiles();
      const committed = readFileSync(join(process.cwd(), 'schema', name), 'utf8');
      expect(committed).toBe(files[name]);
    },
  );

  it('docs/configuration.md matches the configuration schema (run `npm run schema:write` after changing a variable)', () => {
    expect(readFileSync(join(process.cwd(), 'docs', 'configuration.md'), 'utf8')).toBe(renderConfigurationDoc());
  });

  it('spells the contract’s root fields and argument types', async () => {
    const schema = await buildGraphqlSchema([...RESOLVERS]);
    const args = (type: 'Query' | 'Mutation', field: string) =>
      (schema.getType(type) as GraphQLObjectType).getFields()[field].args.map((a) => `${a.name}: ${a.type}`);
    expect(String((schema.getType('Query') as GraphQLObjectType).getFields().me.type)).toBe('Account!');
    expect(args('Query', 'job')).toEqual(['id: ID!']);
    expect(args('Query', 'jobs')).toEqual(['first: Int', 'after: String']);
    expect(args('Query', 'creditHistory')).toEqual([
      'accountId: ID',
      'from: DateTime',
      'to: DateTime',
      'kinds: [CreditEntryKind!]',
      'first: Int',
      'after: String',
    ]);
    expect(args('Mutation', 'parse')).toEqual(['input: ParseInput!', 'idempotencyKey: String']);
    expect(args('Mutation', 'transcribe')).toEqual(['input: TranscribeInput!', 'idempotencyKey: String']);
    expect(args('Mutation', 'createApiKey')).toEqual(['name: String', 'scopes: [String!]']);
    expect(args('Mutation', 'revokeApiKey')).toEqual(['id: ID!']);
    const t = (schema.getType('Transcription') as GraphQLObjectType).getFields();
    expect(Object.keys(t)).toEqual(expect.arrayContaining(['srt', 'vtt', 'segments', 'text']));
  });
});
