import { readFileSync } from 'node:fs';

/** How `npm start` runs the server: the environment it sets and the Node flags it gives. */
export interface ServeCommand {
  env: Record<string, string>;
  flags: string[];
}

/**
 * `npm start`'s command, read from package.json's start script, so that the Dockerfile (checked by a
 * test) and the bench start the server exactly as users do.
 *
 * They size the process's memory for a request server. V8: 8 MB semi-spaces instead of 32 MB make
 * the young generation a quarter of the default, and a full collection once the old generation has
 * grown by 30 % (instead of letting it reach three to four times what survived the last one) keeps
 * short-lived garbage that outlived a scavenge from piling up. glibc: MALLOC_ARENA_MAX=2 keeps
 * malloc to two arenas instead of one per thread that touched it (up to 8 per core), each holding
 * on to what it freed. Measured by `npm run bench`: peak RSS under load about 210 MB instead of
 * 380 MB, for the same throughput.
 */
export function serveCommand(packageJson = readFileSync(new URL('../../package.json', import.meta.url), 'utf8')): ServeCommand {
  const start = (JSON.parse(packageJson) as { scripts?: Record<string, string> }).scripts?.start ?? '';
  const m = /((?:\b[A-Z_]+=\S+\s+)*)\bnode((?:\s+--[\w-]+(?:=\S+)?)*)\s+dist\/cli\/main\.js serve\b/.exec(start);
  if (!m) throw new Error('package.json: the start script does not run `[VAR=value ...] node [flags] dist/cli/main.js serve`');
  const env = Object.fromEntries(m[1].trim().split(/\s+/).filter(Boolean).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
  return { env, flags: m[2].trim().split(/\s+/).filter(Boolean) };
}
