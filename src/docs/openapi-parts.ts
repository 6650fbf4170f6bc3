import type { ErrorCode } from '../errors.js';

/** Small pieces the OpenAPI document's parts share. */

export const ref = (kind: 'schemas' | 'parameters' | 'headers', name: string) => ({ $ref: `#/components/${kind}/${name}` });
export const json = (schema: object, extra: object = {}) => ({ 'application/json': { schema, ...extra } });
export const text = { type: 'string' };

/** Every answer carries its request id; answers of rate-limited routes carry the limit's state. */
export const REQUEST_ID = { 'x-request-id': ref('headers', 'RequestId') };
export const LIMITED = { ...REQUEST_ID, RateLimit: ref('headers', 'RateLimit'), 'RateLimit-Policy': ref('headers', 'RateLimitPolicy') };

/** Any route can fail with these: the per-address limit runs before the route, and a bug is a bug. */
export const ALWAYS: ErrorCode[] = ['RATE_LIMITED', 'INTERNAL_ERROR'];
