import { printSchema } from 'graphql';
import { stringify } from 'yaml';
import { RESOLVERS } from '../graphql/resolvers.js';
import { buildGraphqlSchema } from '../graphql/schema.js';
import { buildOpenApi } from './openapi.js';

const HEADER = 'Generated from the code by `npm run schema:write`; do not edit by hand.';

/** The two committed schema files, as the code defines them now. */
export async function renderSchemaFiles(): Promise<{ 'schema.graphql': string; 'openapi.yaml': string }> {
  return {
    'schema.graphql': `# ${HEADER}\n\n${printSchema(await buildGraphqlSchema([...RESOLVERS]))}\n`,
    'openapi.yaml': `# ${HEADER}\n${stringify(buildOpenApi(), { lineWidth: 0, aliasDuplicateObjects: false })}`,
  };
}
