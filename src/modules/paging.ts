import { AppError } from '../errors.js';

/**
 * Keyset paging for the repositories: transport-neutral, so services and repositories need not
 * import a transport. The GraphQL connection types (graphql/connection.ts) wrap these shapes.
 */

export interface PageInfo {
  hasNextPage: boolean;
  endCursor: string | null;
}

/** A page of rows ordered newest first by (createdAt, id). */
export interface Page<T> {
  edges: { cursor: string; node: T }[];
  pageInfo: PageInfo;
}

/**
 * Cursors name a row's position (created_at, id), not an offset, so they stay correct when rows
 * are inserted between pages. Opaque to clients.
 */
export function encodeCursor(createdAt: Date, id: string | number): string {
  return Buffer.from(`${createdAt.toISOString()}|${id}`).toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  const [iso, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const createdAt = new Date(iso ?? '');
  if (!id || Number.isNaN(createdAt.getTime()))
    throw new AppError('INVALID_INPUT', 'after is not a cursor from this API.', { after: 'invalid cursor' });
  return { createdAt, id };
}

/** A page's size when `first` is not given, and the most `first` may ask for. */
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** Clamps a page size: default 20, at most 100. */
export function pageSize(first: number | null | undefined): number {
  if (first == null) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE)
    throw new AppError('INVALID_INPUT', 'first must be 1 to 100.', { first: 'must be 1 to 100' });
  return first;
}

export function toPage<T>(rows: T[], size: number, key: (row: T) => { createdAt: Date; id: string | number }): Page<T> {
  const hasNextPage = rows.length > size;
  const edges = rows.slice(0, size).map((node) => ({ cursor: encodeCursor(key(node).createdAt, key(node).id), node }));
  return { edges, pageInfo: { hasNextPage, endCursor: edges.at(-1)?.cursor ?? null } };
}
