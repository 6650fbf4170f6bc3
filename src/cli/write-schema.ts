import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderSchemaFiles } from '../docs/schema-files.js';

/** Writes schema/schema.graphql and schema/openapi.yaml from the code. */
const files = await renderSchemaFiles();
for (const [name, text] of Object.entries(files)) {
  writeFileSync(join(process.cwd(), 'schema', name), text);
  process.stdout.write(`wrote schema/${name}\n`);
}
