#!/usr/bin/env node
// The operator command. Runs the compiled code; `npm run build` (or `npm start`) compiles it.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
if (!existsSync(main)) {
  process.stderr.write('mediagate: not built yet; run `npm run build` first.\n');
  process.exit(2);
}
await import(main);
