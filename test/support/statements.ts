import pg from 'pg';
import type { Harness } from './harness.js';

/**
 * Every statement sent to the database while `fn` runs, counted where they all pass: the `pg`
 * client under MikroORM's pool, whichever layer (entity manager, raw SQL, transaction) issued it.
 * Only meaningful on a harness without a job queue (nothing else talks to the database meanwhile).
 */
export async function countStatements<T>(fn: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const q = args[0] as string | { text?: string };
    statements.push(typeof q === 'string' ? q : String(q?.text));
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  try {
    const result = await fn();
    // The caller's key is usually answered from the key cache, but a late notification (the account's
    // creation) can empty it: its lookup is counted apart, so only the query's own statements are compared.
    return { result, statements: statements.filter((q) => !/secret_hash/.test(q)) };
  } finally {
    pg.Client.prototype.query = original;
  }
}

/** One page of a connection, read with the statements it took. */
export interface CountedPage<N> {
  nodes: N[];
  statements: string[];
}

/**
 * The N+1 check: reads a small and a large page of a GraphQL connection (`$first` set to each
 * size) and expects each page full, without errors, and the large one to take exactly as many
 * statements as the small one (and no more than `most`). Returns both pages for the caller's own
 * checks (the exact count, the rows).
 */
export async function expectPagesInSameStatements<D, N>(
  h: Harness,
  read: {
    query: string;
    key: string;
    variables?: Record<string, unknown>;
    /** The page's nodes in the answer. */
    nodes: (data: D) => N[];
    sizes: [small: number, large: number];
    most?: number;
  },
): Promise<{ small: CountedPage<N>; large: CountedPage<N> }> {
  const page = async (first: number): Promise<CountedPage<N>> => {
    const { result, statements } = await countStatements(() => h.gql<D>(read.query, { ...read.variables, first }, read.key));
    expect(result.errors).toBeUndefined();
    const nodes = read.nodes(result.data);
    expect(nodes).toHaveLength(first);
    return { nodes, statements };
  };
  const small = await page(read.sizes[0]);
  const large = await page(read.sizes[1]);
  expect(large.statements.length).toBe(small.statements.length);
  expect(large.statements.length).toBeLessThanOrEqual(read.most ?? 8);
  return { small, large };
}
