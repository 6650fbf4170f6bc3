#!/usr/bin/env node
// The operator command. Runs the compiled code; `npm run build` (or `npm start`) compiles it.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';

// The project brings its own Node (the `node` devDependency), which npx and the npm scripts put
// first on the PATH. Started by an older Node some other way, hand over to that one.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  const own = fileURLToPath(new URL('../node_modules/.bin/node', import.meta.url));
  if (!existsSync(own)) {
    process.stderr.write(
      `mediagate: needs Node 22.19 or later (this is ${process.version}); run \`npm install\` to get the project's own.\n`,
    );
    process.exit(2);
  }
  const run = spawnSync(own, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(run.status ?? 128 + (constants.signals[run.signal] ?? 0));
}

const main = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
if (!existsSync(main)) {
  process.stderr.write('mediagate: not built yet; run `npm run build` first.\n');
  process.exit(2);
}
await import(main);
