import { z } from 'zod';
import { AppError } from '../errors.js';

/** Validates with a zod schema; on failure one INVALID_INPUT whose details name each bad field. */
export function validate<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const details: Record<string, string> = {};
  for (const issue of parsed.error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) details[[...issue.path, key].join('.')] = 'unknown field';
    } else {
      details[issue.path.join('.') || 'body'] ??= issue.message;
    }
  }
  const fields = Object.keys(details).join(', ');
  throw new AppError('INVALID_INPUT', `Invalid input: ${fields}.`, details);
}

/** GraphQL sends null for an omitted optional argument; the services treat both alike. */
export function dropNulls<T extends object>(input: T): T {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return input;
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== null && v !== undefined)) as T;
}

/** An absolute http(s) URL of reasonable length, as the caller gave it. */
export const httpUrl = z
  .string({ error: 'must be a string' })
  .trim()
  .min(1, 'is required')
  .max(2048, 'must be at most 2048 characters')
  .refine((s) => {
    try {
      const u = new URL(s);
      return u.protocol === 'http:' || u.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'must be an absolute http(s) URL');
