import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderSchemaFiles } from '../../src/docs/schema-files.js';

describe('committed schema files', () => {
  it.each(['schema.graphql', 'openapi.yaml'] as const)('%s matches the code (run `npm run schema:write` after changing the API)', async (name) => {
    const files = await renderSchemaFiles();
    const committed = readFileSync(join(process.cwd(), 'schema', name), 'utf8');
    expect(committed).toBe(files[name]);
  });

  it('spells the contract’s root fields and argument types', async () => {
    const sdl = (await renderSchemaFiles())['schema.graphql'];
    for (const field of ['me: AccountType!', 'job(id: ID!): JobType!', 'parse(input: ParseInput!', 'transcribe(input: TranscribeInput!', 'createApiKey(', 'revokeApiKey(id: ID!): ApiKeyType!']) {
      expect(sdl).toContain(field);
    }
    expect(sdl).toMatch(/creditHistory\(accountId: ID, from: DateTime, to: DateTime, kinds: \[CreditEntryKind!\], first: Int, after: String\)/);
  });
});
