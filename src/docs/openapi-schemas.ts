import { contractComponents } from '../types/contract/index.js';

/**
 * The response bodies of the OpenAPI document (components.schemas), as the REST shims send them:
 * generated from the contract's zod schemas (src/types/contract/), the same ones the routes
 * serialize with; only the account area's session and the readiness probe are written here.
 */

export const nullable = (schema: object) => ({ anyOf: [schema, { type: 'null' }] });
const str = { type: 'string' };
const dateTime = { type: 'string', format: 'date-time' };

const session = {
  type: 'object',
  required: ['csrfToken', 'expiresAt', 'account'],
  properties: {
    csrfToken: { type: 'string', description: 'send it as x-csrf-token on every cookie-authenticated request that may change something' },
    expiresAt: dateTime,
    account: { type: 'object', required: ['id', 'name'], properties: { id: { type: 'string', format: 'uuid' }, name: str } },
  },
};

const readiness = {
  type: 'object',
  required: ['status'],
  properties: {
    status: { type: 'string', enum: ['ready', 'unavailable'] },
    reason: { type: 'string', description: 'what is not ready, e.g. database' },
  },
};

export const SCHEMAS = {
  ...contractComponents(),
  Session: session,
  Readiness: readiness,
};
