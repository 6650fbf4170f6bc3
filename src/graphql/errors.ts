import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { databaseUnavailable } from '../db/outage.js';
import { AppError, isAppError } from '../errors.js';

/** Codes Apollo and graphql-js give to a malformed operation; to callers they are all INVALID_INPUT. */
const INPUT_CODES = new Set(['GRAPHQL_PARSE_FAILED', 'GRAPHQL_VALIDATION_FAILED', 'BAD_USER_INPUT', 'BAD_REQUEST', 'PERSISTED_QUERY_NOT_SUPPORTED', 'OPERATION_RESOLUTION_FAILURE']);

export interface ErrorLog {
  error(obj: object, msg: string): void;
}

/**
 * One mapper for GraphQL: AppErrors keep their code and details in `extensions`; malformed
 * operations become INVALID_INPUT; anything else is logged and masked as INTERNAL_ERROR, with no
 * stack and no SQL.
 */
export function formatGraphqlError(log: ErrorLog) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    if (isAppError(original)) {
      return {
        message: original.message,
        locations: formatted.locations,
        path: formatted.path,
        extensions: { code: original.code, ...(original.details ? { details: original.details } : {}) },
      };
    }
    const code = formatted.extensions?.code;
    if (typeof code === 'string' && INPUT_CODES.has(code)) {
      return { message: formatted.message, locations: formatted.locations, path: formatted.path, extensions: { code: 'INVALID_INPUT' } };
    }
    // graphql-js errors with no original error are about the operation itself (e.g. a bad variable).
    if (original instanceof GraphQLError && !original.originalError && !formatted.path) {
      return { message: formatted.message, locations: formatted.locations, extensions: { code: 'INVALID_INPUT' } };
    }
    log.error({ err: original }, 'unexpected GraphQL error');
    // A lost database connection: the caller may simply retry.
    const masked = databaseUnavailable(original) ?? new AppError('INTERNAL_ERROR');
    return { message: masked.message, path: formatted.path, extensions: { code: masked.code } };
  };
}
