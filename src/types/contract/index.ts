import { z } from 'zod';
import { contract, registered } from './common.js';

export * from './common.js';
export * from './job.js';
export * from './parse.js';
export * from './transcription.js';

/** The OpenAPI components of every registered response body, refs between them as `#/components/schemas/<name>`. */
export function contractComponents(): Record<string, object> {
  const { schemas } = z.toJSONSchema(contract, {
    target: 'draft-2020-12',
    io: 'output',
    uri: (id) => `#/components/schemas/${id}`,
    unrepresentable: 'any',
  });
  const descriptions = new Map<string, string>();
  for (const [, meta] of contractEntries()) if (meta.description) descriptions.set(meta.id, meta.description);
  const out: Record<string, object> = {};
  // By name: the order modules happen to register them in is not the document's business.
  for (const [id, schema] of Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b))) {
    const { $id: _id, $schema: _schema, ...rest } = tidy(schema) as Record<string, unknown>;
    out[id] = descriptions.has(id) ? { description: descriptions.get(id), ...rest } : rest;
  }
  return out;
}

/** The registry's schemas with their ids. */
function contractEntries(): [z.ZodType, { id: string; description?: string }][] {
  const entries: [z.ZodType, { id: string; description?: string }][] = [];
  for (const schema of registered) {
    const meta = contract.get(schema);
    if (meta) entries.push([schema, meta]);
  }
  return entries;
}

const SAFE = Number.MAX_SAFE_INTEGER;

/**
 * What zod writes that a reader of the document does not need: the bounds of a safe integer on every
 * `z.int()`, and the regular expressions it spells `format: uuid` and `format: date-time` out as.
 */
function tidy(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(tidy);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  const n = node as Record<string, unknown>;
  for (const [k, v] of Object.entries(n)) {
    if ((k === 'minimum' && v === -SAFE) || (k === 'maximum' && v === SAFE)) continue;
    if (k === 'pattern' && (n.format === 'uuid' || n.format === 'date-time')) continue;
    out[k] = tidy(v);
  }
  return out;
}

/**
 * One response body's schema, whole (its components inlined where used), for Fastify's serializer:
 * a nullable value is written `type: [T, 'null']` rather than zod's `anyOf: [T, null]`, which
 * fast-json-stringify would settle by validating every value against each branch (measured by the
 * bench: REST parse 577 req/s with anyOf, 729 without any response schema).
 */
export function standaloneSchema(schema: z.ZodType): object {
  const { $schema: _schema, ...rest } = z.toJSONSchema(schema, { target: 'draft-7', io: 'output', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return withoutNullBranches(rest) as object;
}

/** `anyOf: [X, { type: 'null' }]` as X with 'null' among its types, wherever X names one type. */
function withoutNullBranches(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutNullBranches);
  if (!node || typeof node !== 'object') return node;
  const n = node as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(n)) out[k] = withoutNullBranches(v);
  const branches = out.anyOf as Record<string, unknown>[] | undefined;
  if (Array.isArray(branches) && branches.length === 2) {
    const nullAt = branches.findIndex((b) => b.type === 'null' && Object.keys(b).length === 1);
    const other = branches[1 - nullAt];
    if (nullAt >= 0 && typeof other?.type === 'string') {
      const { anyOf: _anyOf, ...restOfNode } = out;
      return { ...restOfNode, ...other, type: [other.type, 'null'] };
    }
  }
  return out;
}
