import { z } from 'zod';
import { ERROR_CODES } from '../../errors.js';

/**
 * The response contract, written once: one zod schema per response body. From each come the
 * TypeScript type the code builds the body as, the OpenAPI schema (src/docs/openapi-schemas.ts),
 * and the Fastify response schema the REST routes serialize with; GraphQL's object types are held to
 * them field by field (test/unit/contract.test.ts).
 */

/** Every schema the OpenAPI document names as a component, under its name. */
export const contract = z.registry<{ id: string; description?: string }>();

/** The schemas added to `contract`, in order (a zod registry cannot be listed). */
export const registered: z.ZodType[] = [];

/** A schema registered as the OpenAPI component `id`. */
export function component<T extends z.ZodType>(id: string, schema: T, description?: string): T {
  contract.add(schema, { id, ...(description ? { description } : {}) });
  registered.push(schema);
  return schema;
}

export const isoDateTime = () => z.iso.datetime({ offset: true });

export const creditsSchema = component(
  'Credits',
  z.object({ charged: z.int(), balance: z.int() }),
  'What the task charged and the available balance after it (whole credits)',
);
export type CreditsBody = z.infer<typeof creditsSchema>;

export const errorBodySchema = component(
  'Error',
  z.object({
    error: z.object({
      code: z.enum(ERROR_CODES as [string, ...string[]]).meta({ description: 'stable; branch on it (the message may change)' }),
      message: z.string().meta({ description: 'for people' }),
      details: z
        .record(z.string(), z.unknown())
        .optional()
        .meta({ description: 'per code: the bad fields (INVALID_INPUT), required and available (INSUFFICIENT_CREDITS), ...' }),
      requestId: z.string().meta({ description: 'the x-request-id of this response, to quote in a support request' }),
    }),
  }),
  'The one error body of every REST route',
);
export type ErrorBody = z.infer<typeof errorBodySchema>;
