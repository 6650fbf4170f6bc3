import { parse as parseArray } from 'postgres-array';

/** A UUID as Postgres stores it: checked before a query so a malformed id is a clean NOT_FOUND, not a SQL error. */
export const isUuid = (v: string): boolean => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v);

/** A text[] column from a raw query, which may arrive as an array or in Postgres's `{a,"b c"}` text form. */
export function textArray(v: string[] | string): string[] {
  return Array.isArray(v) ? v : parseArray(v);
}
