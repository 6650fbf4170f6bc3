import { renameSync, writeFileSync } from 'node:fs';
import pg from 'pg';

/**
 * Loaded into the gateway with `node --import` in `npm run bench -- --profile` runs: counts the
 * statements the gateway sends through `pg` (the ORM's driver; pg-boss has a `pg` of its own and is
 * not counted), by their shape with literals taken out, and writes the counts to
 * BENCH_STATEMENT_COUNT_FILE when the bench sends SIGUSR2.
 */
const file = process.env.BENCH_STATEMENT_COUNT_FILE;
const counts = new Map<string, number>();

/** The statement's first words with its literals (which the ORM inlines) taken out; cheap, as it runs on every statement. */
export function statementShape(text: string): string {
  return text
    .slice(0, 160)
    .replace(/'(?:[^']|'')*'/g, '?')
    .replace(/\b\d+(?:\.\d+)?\b/g, '?')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 90);
}

if (file) {
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string } | undefined;
    const shape = statementShape(typeof first === 'string' ? first : (first?.text ?? ''));
    counts.set(shape, (counts.get(shape) ?? 0) + 1);
    return query.apply(this, args);
  } as typeof pg.Client.prototype.query;
  process.on('SIGUSR2', () => {
    // Written whole, then renamed, so the bench never reads half a file.
    writeFileSync(`${file}.tmp`, JSON.stringify(Object.fromEntries(counts)));
    renameSync(`${file}.tmp`, file);
  });
}
