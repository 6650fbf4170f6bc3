// Builds the account area (ui/account) into dist/account-ui: one bundled, minified script (Preact,
// uPlot, oidc-client-ts included, nothing from a CDN), its stylesheet, the page and its icon, and
// persisted-documents.json, the manifest of the page's GraphQL documents that the gateway trusts
// (generated first from the page's sources and schema/schema.graphql: ui/codegen.mjs).
import { build } from 'esbuild';
import { copyFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { codegen, GENERATED } from './codegen.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'dist', 'account-ui');
await mkdir(out, { recursive: true });
await codegen();
await build({
  entryPoints: { app: join(here, 'account', 'main.tsx') },
  bundle: true,
  minify: true,
  sourcemap: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  loader: { '.css': 'css' },
  outdir: out,
  logLevel: 'warning',
});
for (const file of ['index.html', 'favicon.svg']) await copyFile(join(here, 'account', file), join(out, file));
await copyFile(join(GENERATED, 'persisted-documents.json'), join(out, 'persisted-documents.json'));
