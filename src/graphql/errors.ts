import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { databaseUnavailable } from '../db/outage.js';
import { AppError, isAppError } from '../errors.js';

export interface ErrorLog {
  error(obj: object, msg: string): void;
}

/**
 * One mapper for GraphQL, on both doors: AppErrors keep their code and details in `extensions`;
 * errors about the operation itself (syntax, validation, limits, variables, an unknown operation
 * name: the ones without a path) and graphql-js's own refusal of an argument are INVALID_INPUT;
 * anything else is logged and masked as INTERNAL_ERROR, with no stack and no SQL.
 */
export function formatGraphqlError(log: ErrorLog) {
  return (error: GraphQLError): GraphQLFormattedError => {
    const { message, locations, path } = error.toJSON();
    // A field's error wraps what its resolver threw; the wrapper adds the path and locations. A
    // refusal of the whole request (no path) that wraps an AppError keeps its code too.
    const original = (path || isAppError(error.originalError)) && error.originalError ? error.originalError : error;
    if (isAppError(original)) {
      return {
        message: original.message,
        locations,
        path,
        extensions: { code: original.code, ...(original.details ? { details: original.details } : {}) },
      };
    }
    if (!path || (original instanceof GraphQLError && !original.originalError)) {
      return { message, locations, ...(path ? { path } : {}), extensions: { code: 'INVALID_INPUT' } };
    }
    log.error({ err: original }, 'unexpected GraphQL error');
    // A lost database connection: the caller may simply retry.
    const masked = databaseUnavailable(original) ?? new AppError('INTERNAL_ERROR');
    return { message: masked.message, path, extensions: { code: masked.code } };
  };
}
