import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderConfigurationDoc } from '../docs/configuration-doc.js';
import { renderSchemaFiles } from '../docs/schema-files.js';

/** Writes schema/schema.graphql, schema/openapi.yaml and docs/configuration.md from the code. */
const files = await renderSchemaFiles();
for (const [name, text] of Object.entries(files)) {
  writeFileSync(join(process.cwd(), 'schema', name), text);
  process.stdout.write(`wrote schema/${name}\n`);
}
writeFileSync(join(process.cwd(), 'docs', 'configuration.md'), renderConfigurationDoc());
process.stdout.write('wrote docs/configuration.md\n');
