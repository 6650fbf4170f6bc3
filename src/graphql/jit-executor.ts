import type { GatewayExecutor, GatewayInterface } from '@apollo/server-gateway-interface';
import { execute, GraphQLError, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { LRUCache } from 'lru-cache';

/** Documents kept compiled, least recently used first out. */
const MAX_COMPILED = 500;
/** Runs of one document with graphql-js before it is worth compiling. */
const COMPILE_AFTER = 2;

/**
 * Apollo's executor replaced by graphql-jit for the documents clients send again and again: a
 * document is compiled into a function of its own (argument coercion, field resolution and result
 * completion specialised to its selection) once it has run COMPILE_AFTER times through graphql-js,
 * so a caller sending ever-new documents cannot make the server compile each one, and the cache is
 * bounded. Parsing, validation (the operation limits included), errors and HTTP status stay Apollo's.
 *
 * Apollo Server takes a custom executor only from a "gateway"; this is the smallest one: one schema
 * that never changes.
 */
export function jitGateway(schema: GraphQLSchema): GatewayInterface {
  // A document's compiled function, or null for one graphql-jit cannot compile (graphql-js runs it).
  const compiled = new LRUCache<string, { query: CompiledQuery | null }>({ max: MAX_COMPILED });
  const runs = new LRUCache<string, number>({ max: MAX_COMPILED * 4 });

  const executor: GatewayExecutor = async ({ document, operation, queryHash, context, request }) => {
    // The operation name as the caller sent it (Apollo's own is null when it named none that exists).
    const { operationName } = request;
    const interpret = () => execute({ schema, document, contextValue: context, variableValues: request.variables, operationName });
    // Apollo found no operation to run (an unknown operationName): graphql-js says why, in its words.
    if (!operation) return interpret();
    const key = `${queryHash}\u0000${operationName ?? ''}`;
    let entry = compiled.get(key);
    if (!entry) {
      const seen = (runs.get(key) ?? 0) + 1;
      if (seen < COMPILE_AFTER) {
        runs.set(key, seen);
        return interpret();
      }
      runs.delete(key);
      const query = compileQuery(schema, document, operationName);
      entry = { query: isCompiledQuery(query) ? query : null };
      compiled.set(key, entry);
    }
    if (!entry.query) return interpret();
    const result = await entry.query.query(undefined, context, request.variables ?? {});
    if (!result.errors) return result;
    // No data at all: the variables were refused before anything ran. graphql-js refuses them again,
    // so the caller reads its words and Apollo recognises them as bad input (400 INVALID_INPUT).
    if (!('data' in result)) return interpret();
    return { ...result, errors: result.errors.map(asGraphqlJsError) };
  };

  return {
    async load() {
      return { executor };
    },
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => {};
    },
    async stop() {},
  };
}

/**
 * graphql-jit's errors borrow graphql-js's prototype but leave `extensions` undefined, on which
 * Apollo's error formatting trips (every resolver error became INTERNAL_SERVER_ERROR): they are
 * remade as graphql-js errors, with the same message, place, path and original error.
 */
function asGraphqlJsError(e: GraphQLError): GraphQLError {
  const error = new GraphQLError(e.message, { path: e.path, originalError: e.originalError ?? undefined, extensions: e.extensions });
  if (e.locations) Object.assign(error, { locations: e.locations });
  return error;
}
