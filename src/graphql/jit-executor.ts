import { execute, GraphQLError, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';

/** Runs of one document with graphql-js before it is worth compiling. */
const COMPILE_AFTER = 2;

/** One operation of a parsed and validated document, as a door hands it over. */
export interface OperationRun {
  document: DocumentNode;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
  context: unknown;
}

export type Executor = (run: OperationRun) => Promise<ExecutionResult>;

/** Documents compiled, and runs through a compiled function, in this process (tests read them). */
export const jitCounts = { compiled: 0, compiledRuns: 0 };

/** graphql-js only: what runs when tracing is on, so that every operation keeps its execute span. */
export function interpretingExecutor(schema: GraphQLSchema): Executor {
  return async ({ document, operationName, variables, context }) =>
    execute({ schema, document, contextValue: context, variableValues: variables, operationName });
}

/**
 * graphql-jit for the documents clients send again and again: a document is compiled into a
 * function of its own (argument coercion, field resolution and result completion specialised to its
 * selection) once it has run COMPILE_AFTER times through graphql-js, so a caller sending ever-new
 * documents cannot make the server compile each one. Documents come from Apollo Server's
 * documentStore (document-store.ts, through the gateway interface: apollo.ts), so the same text is
 * the same object here (one too long to keep is never compiled), and what is kept of a document
 * goes when that store lets it go.
 */
export function compilingExecutor(schema: GraphQLSchema): Executor {
  const interpret = interpretingExecutor(schema);
  // Per document and operation name: the runs so far, then the compiled function, or null for one
  // graphql-jit cannot compile (graphql-js runs it).
  const byDocument = new WeakMap<DocumentNode, Map<string, { runs: number; query?: CompiledQuery | null }>>();

  return async (run) => {
    const { document, operationName, variables, context } = run;
    let operations = byDocument.get(document);
    if (!operations) byDocument.set(document, (operations = new Map()));
    let entry = operations.get(operationName ?? '');
    if (!entry) operations.set(operationName ?? '', (entry = { runs: 0 }));
    if (entry.query === undefined) {
      if (++entry.runs < COMPILE_AFTER) return interpret(run);
      const query = compileQuery(schema, document, operationName ?? undefined);
      entry.query = isCompiledQuery(query) ? query : null;
      if (entry.query) jitCounts.compiled++;
    }
    if (!entry.query) return interpret(run);
    jitCounts.compiledRuns++;
    const result = await entry.query.query(undefined, context, variables ?? {});
    if (!result.errors) return result;
    // No data at all: the variables were refused before anything ran. graphql-js refuses them again,
    // so the caller reads its words.
    if (!('data' in result)) return interpret(run);
    return { ...result, errors: result.errors.map(asGraphqlJsError) };
  };
}

/**
 * graphql-jit's errors borrow graphql-js's prototype but leave `extensions` undefined: they are
 * remade as graphql-js errors, with the same message, place, path and original error.
 */
function asGraphqlJsError(e: GraphQLError): GraphQLError {
  const error = new GraphQLError(e.message, { path: e.path, originalError: e.originalError ?? undefined, extensions: e.extensions });
  if (e.locations) Object.assign(error, { locations: e.locations });
  return error;
}
