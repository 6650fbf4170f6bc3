import { readFileSync } from 'node:fs';

/**
 * The Node flags `npm start` runs the server with, read from package.json's start script, so that
 * the Dockerfile's entry point (checked by a test) and the bench start it exactly as users do.
 *
 * They size V8's heap for a request server: 8 MB semi-spaces instead of 32 MB make the young
 * generation a quarter of the default, and a full collection once the old generation has grown by
 * 30 % (instead of letting it reach three to four times what survived the last one) keeps
 * short-lived garbage that outlived a scavenge from piling up. Measured by `npm run bench`: peak RSS
 * under load about 220 MB instead of 380 MB, for the same throughput. (The image also sets
 * MALLOC_ARENA_MAX=2, which a start script cannot do on every system: see the Dockerfile.)
 */
export function serveNodeFlags(packageJson = readFileSync(new URL('../../package.json', import.meta.url), 'utf8')): string[] {
  const start = (JSON.parse(packageJson) as { scripts?: Record<string, string> }).scripts?.start ?? '';
  const m = /\bnode((?:\s+--[\w-]+(?:=\S+)?)*)\s+dist\/cli\/main\.js serve\b/.exec(start);
  if (!m) throw new Error('package.json: the start script does not run `node [flags] dist/cli/main.js serve`');
  return m[1].trim().split(/\s+/).filter(Boolean);
}

/**
 * The environment the image sets for the runtime rather than for mediagate (the Dockerfile, checked
 * by a test): two glibc malloc arenas instead of one per thread that touched malloc, each keeping
 * what it freed. The bench runs the gateway with it too, as production does (without it, its peak
 * RSS is about 30 MB higher for the same throughput); on Linux, `MALLOC_ARENA_MAX=2 npm start`.
 */
export const SERVE_PROCESS_TUNING: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
