import { z } from 'zod';
import { accessVariables } from './env-access.js';
import { graphqlVariables } from './env-graphql.js';
import { mediaVariables } from './env-media.js';
import { serverVariables } from './env-server.js';

/**
 * Every environment variable the service reads: its rules, its default, and what it does in an
 * operator's words (`.describe`, or `.meta` with `unset` saying what happens without one);
 * docs/configuration.md is generated from it by `npm run schema:write`.
 */
export const envSchema = z.object({
  ...serverVariables,
  ...mediaVariables,
  ...graphqlVariables,
  ...accessVariables,
});

export type Env = z.output<typeof envSchema>;
export type Variable = keyof Env;
