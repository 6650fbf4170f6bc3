import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * The house rule (ARCHITECTURE.md, Layout): layers only point down. A file imports from its own layer
 * or the layers below it, never above; among the transports, REST and the app-wide HTTP hooks never
 * borrow from GraphQL, and the hooks never from REST; and no file reaches itself through its imports.
 * From a file's path a newcomer knows what it may import.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SRC = join(ROOT, 'src');

/** The layers, from the bottom up; a path's layer is the first whose test it passes. */
const LAYERS: { name: string; holds: (file: string) => boolean }[] = [
  {
    name: 'foundation',
    holds: (f) =>
      /^src\/(errors|config|local-config|addresses|logger|metrics|telemetry|failpoints|request-scope)\.ts$/.test(f) ||
      f.startsWith('src/config/') ||
      f.startsWith('src/types/'),
  },
  { name: 'net and media', holds: (f) => f.startsWith('src/net/') || f.startsWith('src/media/') },
  { name: 'db', holds: (f) => f.startsWith('src/db/') },
  { name: 'providers', holds: (f) => f.startsWith('src/providers/') },
  { name: 'modules', holds: (f) => f.startsWith('src/modules/') },
  { name: 'transports', holds: (f) => /^src\/(graphql|rest|http|docs)\//.test(f) },
  { name: 'app and processes', holds: (f) => /^src\/(app|root|server)\.ts$/.test(f) || f.startsWith('src/cli/') },
];

/** Within the transports: which of them each may import besides itself (docs renders both doors' descriptions; REST serves the rendered document). */
const TRANSPORT_PEERS: Record<string, string[]> = {
  graphql: ['http'],
  rest: ['http', 'docs'],
  http: [],
  docs: ['graphql', 'rest', 'http'],
};

const layerOf = (file: string) => LAYERS.findIndex((l) => l.holds(file));
const transportOf = (file: string) => /^src\/(graphql|rest|http|docs)\//.exec(file)?.[1];

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
    .map((spec) =>
      posix
        .normalize(
          relative(ROOT, resolve(dirname(file), spec))
            .split('\\')
            .join('/'),
        )
        .replace(/\.js$/, '.ts'),
    );
}

/** Every import that breaks the rule, as `importer → imported (why)`. */
function layeringViolations(files: { path: string; imports: string[] }[]): string[] {
  const problems: string[] = [];
  for (const { path, imports } of files) {
    const from = layerOf(path);
    if (from < 0) {
      problems.push(`${path} (in no layer)`);
      continue;
    }
    for (const target of imports) {
      const to = layerOf(target);
      if (to > from) problems.push(`${path} → ${target} (${LAYERS[from].name} importing ${LAYERS[to].name})`);
      const [a, b] = [transportOf(path), transportOf(target)];
      if (a && b && a !== b && !TRANSPORT_PEERS[a].includes(b)) problems.push(`${path} → ${target} (${a} borrowing ${b})`);
    }
  }
  return problems;
}

/** Every import cycle, each as the files around it (Tarjan's strongly connected components). */
function importCycles(files: { path: string; imports: string[] }[]): string[][] {
  const graph = new Map(files.map((f) => [f.path, f.imports.filter((i) => i !== f.path)]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

/** HTTP's words: request methods, and header names (any `x-…` name too). */
const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'CONNECT', 'TRACE']);
const HTTP_HEADERS = new Set([
  'authorization',
  'cookie',
  'set-cookie',
  'content-type',
  'content-length',
  'content-disposition',
  'content-range',
  'accept',
  'accept-encoding',
  'user-agent',
  'referer',
  'origin',
  'host',
  'range',
  'location',
  'retry-after',
  'idempotency-key',
  'prefer',
  'cache-control',
  'etag',
  'if-none-match',
  'www-authenticate',
  'forwarded',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);

/**
 * Where a file names HTTP: a string that is a request method or a header name, or the word `Bearer`
 * outside comments (the scheme of the Authorization header). Comments may speak of HTTP; code in the
 * domain may not, so that how a request arrives is decided at the edge (src/http/, the doors) only.
 */
function httpWords(text: string): string[] {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, text);
  const found: string[] = [];
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    const value = scanner.getTokenValue();
    if (kind === ts.SyntaxKind.StringLiteral || kind === ts.SyntaxKind.NoSubstitutionTemplateLiteral) {
      if (HTTP_METHODS.has(value) || HTTP_HEADERS.has(value.toLowerCase()) || /^x-[a-z0-9-]+$/i.test(value))
        found.push(JSON.stringify(value));
    } else if (kind === ts.SyntaxKind.Identifier && value === 'Bearer') found.push('Bearer');
  }
  return found;
}

describe('layering', () => {
  const files = sourceFiles(SRC).map((abs) => ({
    path: relative(ROOT, abs).split('\\').join('/'),
    imports: localImports(abs, readFileSync(abs, 'utf8')),
  }));

  it('reads the imports of every source file', () => {
    expect(files.length).toBeGreaterThan(50);
    const routes = files.find((f) => f.path === 'src/rest/routes.ts');
    expect(routes?.imports).toContain('src/http/credentials.ts');
  });

  it('puts every source file in a layer, and every import points down or across its own layer', () => {
    expect(layeringViolations(files)).toEqual([]);
  });

  it('keeps every source file within 400 lines, so each reads in one sitting', () => {
    const long = files
      .map((f) => ({ path: f.path, lines: readFileSync(join(ROOT, f.path), 'utf8').split('\n').length }))
      .filter((f) => f.lines > 400)
      .map((f) => `${f.path}: ${f.lines} lines`);
    expect(long).toEqual([]);
  });

  it('has no import cycles', () => {
    expect(importCycles(files)).toEqual([]);
  });

  it('keeps the domain free of GraphQL and HTTP libraries too', () => {
    const transportLibraries = /^(type-graphql|graphql|graphql-ws|fastify|@fastify\/.*|@apollo\/.*)$/;
    const offenders = sourceFiles(join(SRC, 'modules')).flatMap((abs) =>
      ts
        .preProcessFile(readFileSync(abs, 'utf8'), true, true)
        .importedFiles.map((i) => i.fileName)
        .filter((spec) => transportLibraries.test(spec))
        .map((spec) => `${relative(ROOT, abs)} → ${spec}`),
    );
    expect(offenders).toEqual([]);
  });

  it('keeps HTTP out of the domain: no file in modules/ names a request method, a header or the Bearer scheme', () => {
    const offenders = sourceFiles(join(SRC, 'modules')).flatMap((abs) =>
      httpWords(readFileSync(abs, 'utf8')).map((word) => `${relative(ROOT, abs)}: ${word}`),
    );
    expect(offenders).toEqual([]);
    // What it is meant to catch, and what it lets be.
    expect(
      httpWords(
        [
          `const SAFE = new Set(['GET', 'HEAD']);`,
          `const h = { 'Content-Type': 'application/json', 'x-csrf-token': t };`,
          `const token = /^Bearer\\s+(\\S+)$/i.exec(header);`,
          `// the Authorization header's Bearer token, 'GET' in a comment`,
          `const status = 'GETTING'; const kind = 'video';`,
        ].join('\n'),
      ),
    ).toEqual(['"GET"', '"HEAD"', '"Content-Type"', '"x-csrf-token"', 'Bearer']);
  });

  it('catches what it is meant to catch', () => {
    const text = [
      `import type { JobType } from '../../graphql/jobs/job.graphql.js';`,
      `export { pageSize } from '../../graphql/connection.js';`,
      `const later = () => import('../../rest/routes.js');`,
      `// import { x } from '../../graphql/commented-out.js';`,
      `import { AppError } from '../../errors.js';`,
    ].join('\n');
    const imports = localImports(join(SRC, 'modules/jobs/job.view.ts'), text);
    expect(imports).toEqual(['src/graphql/jobs/job.graphql.ts', 'src/graphql/connection.ts', 'src/rest/routes.ts', 'src/errors.ts']);
    expect(layeringViolations([{ path: 'src/modules/jobs/job.view.ts', imports }])).toEqual([
      'src/modules/jobs/job.view.ts → src/graphql/jobs/job.graphql.ts (modules importing transports)',
      'src/modules/jobs/job.view.ts → src/graphql/connection.ts (modules importing transports)',
      'src/modules/jobs/job.view.ts → src/rest/routes.ts (modules importing transports)',
    ]);
    expect(
      layeringViolations([
        {
          path: 'src/rest/routes.ts',
          imports: ['src/graphql/jobs/job.graphql.ts', 'src/http/credentials.ts', 'src/modules/jobs/job.view.ts'],
        },
      ]),
    ).toEqual(['src/rest/routes.ts → src/graphql/jobs/job.graphql.ts (rest borrowing graphql)']);
    expect(layeringViolations([{ path: 'src/db/database.ts', imports: ['src/modules/entities.ts', 'src/net/guarded-client.ts'] }])).toEqual(
      ['src/db/database.ts → src/modules/entities.ts (db importing modules)'],
    );
    expect(layeringViolations([{ path: 'src/stray.ts', imports: [] }])).toEqual(['src/stray.ts (in no layer)']);
    // The app and the root may import every layer.
    expect(
      layeringViolations([
        {
          path: 'src/root.ts',
          imports: ['src/graphql/resolvers.ts', 'src/rest/routes.ts', 'src/modules/entities.ts', 'src/db/database.ts'],
        },
      ]),
    ).toEqual([]);
    expect(
      importCycles([
        { path: 'a', imports: ['b'] },
        { path: 'b', imports: ['c'] },
        { path: 'c', imports: ['a'] },
        { path: 'd', imports: ['a'] },
      ]),
    ).toEqual([['a', 'b', 'c']]);
  });
});
