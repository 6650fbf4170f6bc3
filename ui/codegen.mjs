// The account area's GraphQL documents and their types, generated from its sources (the graphql()
// calls in ui/account) and the committed schema (schema/schema.graphql) by graphql-codegen's client
// preset, into ui/account/gql/ (not committed): typed document strings carrying their SHA-256, and
// persisted-documents.json, the manifest of hash → document that the gateway trusts (ui/build.mjs
// copies it beside the page). Run by `npm run build` and `npm run typecheck`.
import { generate } from '@graphql-codegen/cli';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const GENERATED = join(root, 'ui', 'account', 'gql');

export async function codegen() {
  await generate(
    {
      cwd: root,
      schema: join(root, 'schema', 'schema.graphql'),
      documents: ['ui/account/**/*.{ts,tsx}', '!ui/account/gql/**'],
      ignoreNoDocuments: false,
      silent: true,
      generates: {
        'ui/account/gql/': {
          preset: 'client',
          presetConfig: { fragmentMasking: false, persistedDocuments: { hashAlgorithm: 'sha256' } },
          config: {
            // Document strings (no graphql-js in the page), with their hash in __meta__.
            documentMode: 'string',
            useTypeImports: true,
            enumsAsTypes: true,
            skipTypename: true,
            scalars: { DateTime: 'string', SafeInt: 'number', JSONObject: 'Record<string, unknown>' },
          },
        },
      },
    },
    true,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await codegen();
