import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * The house rule (ARCHITECTURE.md): transports (graphql/, rest/) call services; nothing below them
 * imports a transport. GraphQL classes (`*.graphql.ts`) and resolvers (`*.resolver.ts`) live beside
 * their module but belong to the GraphQL transport, so they count as transport files too.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SRC = join(ROOT, 'src');

/** Files above the transports, allowed to import them: the transports, the app that mounts them, the entry points. */
const TRANSPORT_OR_ABOVE: ((file: string) => boolean)[] = [
  (f) => f.startsWith('src/graphql/'),
  (f) => f.startsWith('src/rest/'),
  (f) => f === 'src/app.ts' || f === 'src/server.ts',
  (f) => f.startsWith('src/cli/'),
  // Renders the GraphQL SDL and the OpenAPI document of the two doors (`npm run schema:write`).
  (f) => f.startsWith('src/docs/'),
  (f) => f.endsWith('.resolver.ts') || f.endsWith('.graphql.ts'),
];

const isGraphqlTransport = (f: string) => f.startsWith('src/graphql/') || f.endsWith('.graphql.ts') || f.endsWith('.resolver.ts');
const isTransport = (f: string) => isGraphqlTransport(f) || f.startsWith('src/rest/');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The repository-relative files one source file imports (static, `export ... from`, `import type`, dynamic). */
function localImports(file: string, text: string): string[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles
    .map((i) => i.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => posix.normalize(relative(ROOT, resolve(dirname(file), spec)).split('\\').join('/')).replace(/\.js$/, '.ts'));
}

/** Every import that breaks the rule, as `importer → imported`. */
function layeringViolations(files: { path: string; imports: string[] }[]): string[] {
  const problems: string[] = [];
  for (const { path, imports } of files) {
    for (const target of imports) {
      if (!TRANSPORT_OR_ABOVE.some((allowed) => allowed(path)) && isTransport(target)) problems.push(`${path} → ${target} (below the transports)`);
      if (path.startsWith('src/rest/') && isGraphqlTransport(target)) problems.push(`${path} → ${target} (REST borrowing GraphQL)`);
    }
  }
  return problems;
}

describe('layering', () => {
  const files = sourceFiles(SRC).map((abs) => ({ path: relative(ROOT, abs).split('\\').join('/'), imports: localImports(abs, readFileSync(abs, 'utf8')) }));

  it('reads the imports of every source file', () => {
    expect(files.length).toBeGreaterThan(50);
    const routes = files.find((f) => f.path === 'src/rest/routes.ts');
    expect(routes?.imports).toContain('src/modules/access.ts');
  });

  it('keeps services, repositories and views free of transport imports, and REST free of GraphQL', () => {
    expect(layeringViolations(files)).toEqual([]);
  });

  it('puts the paging helpers the repositories use in a neutral module', () => {
    for (const repo of ['src/modules/jobs/job.repository.ts', 'src/modules/credits/credit-history.repository.ts', 'src/modules/accounts/account.service.ts']) {
      expect(files.find((f) => f.path === repo)?.imports).toContain('src/modules/paging.ts');
    }
  });

  it('catches what it is meant to catch', () => {
    const text = [
      `import type { JobType } from './job.graphql.js';`,
      `export { pageSize } from '../../graphql/connection.js';`,
      `const later = () => import('../../rest/routes.js');`,
      `// import { x } from '../../graphql/commented-out.js';`,
      `import { AppError } from '../../errors.js';`,
    ].join('\n');
    const imports = localImports(join(SRC, 'modules/jobs/job.view.ts'), text);
    expect(imports).toEqual(['src/modules/jobs/job.graphql.ts', 'src/graphql/connection.ts', 'src/rest/routes.ts', 'src/errors.ts']);
    expect(layeringViolations([{ path: 'src/modules/jobs/job.view.ts', imports }])).toEqual([
      'src/modules/jobs/job.view.ts → src/modules/jobs/job.graphql.ts (below the transports)',
      'src/modules/jobs/job.view.ts → src/graphql/connection.ts (below the transports)',
      'src/modules/jobs/job.view.ts → src/rest/routes.ts (below the transports)',
    ]);
    expect(layeringViolations([{ path: 'src/rest/routes.ts', imports: ['src/modules/jobs/job.graphql.ts', 'src/graphql/connection.ts', 'src/modules/jobs/job.view.ts'] }])).toEqual([
      'src/rest/routes.ts → src/modules/jobs/job.graphql.ts (REST borrowing GraphQL)',
      'src/rest/routes.ts → src/graphql/connection.ts (REST borrowing GraphQL)',
    ]);
    // Transports and what sits above them may import transports.
    expect(layeringViolations([
      { path: 'src/app.ts', imports: ['src/graphql/schema.ts', 'src/rest/routes.ts'] },
      { path: 'src/modules/jobs/job.resolver.ts', imports: ['src/graphql/connection.ts', 'src/modules/jobs/job.graphql.ts'] },
      { path: 'src/graphql/schema.ts', imports: ['src/modules/jobs/job.resolver.ts'] },
    ])).toEqual([]);
  });
});
