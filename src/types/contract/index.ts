import { z } from 'zod';
import { contract } from './common.js';

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
  const out: Record<string, object> = {};
  for (const [id, schema] of Object.entries(schemas)) {
    const { $id: _id, $schema: _schema, ...rest } = schema as Record<string, unknown>;
    out[id] = rest;
  }
  return out;
}

/** One response body's schema, whole (its components inlined where used), for Fastify's serializer and for validators. */
export function standaloneSchema(schema: z.ZodType): object {
  const { $schema: _schema, ...rest } = z.toJSONSchema(schema, { target: 'draft-7', io: 'output', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
}
