import {
  GraphQLError,
  NoSchemaIntrospectionCustomRule,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLSchema,
} from 'graphql';
import { LRUCache } from 'lru-cache';
import type { OperationLimits } from './limits.js';

/** Distinct documents kept parsed and validated. */
const MAX_DOCUMENTS = 1000;
/**
 * The characters of text they may add up to. A parsed document keeps its text and about 120 bytes
 * of syntax tree per character when dense with tokens (measured), so this bounds the cache near
 * 30 MB whatever callers send; a longer text than MAX_CACHED_CHARS is parsed each time it comes.
 */
const MAX_TOTAL_CHARS = 256 * 1024;
const MAX_CACHED_CHARS = 64 * 1024;

/** A document ready to run, or why it cannot run (request errors: syntax, validation, limits). */
export type Prepared = { document: DocumentNode; errors?: undefined } | { document?: undefined; errors: readonly GraphQLError[] };

/** Parses and validates the WebSocket door's operations, each distinct text once (HTTP: Apollo's documentStore, document-store.ts, with the same rules). */
export interface DocumentCache {
  /** The document of a text; with the operation's name and variables, also weighed by the cost limit as it will run. */
  prepare(query: string, request?: { operationName?: string | null; variables?: Record<string, unknown> | null }): Prepared;
}

/**
 * Clients send the same few documents again and again, so each text is parsed and validated once
 * and the outcome kept, refusals included (a text's validity cannot change: the schema and the
 * rules are fixed for the process). The rules are the specification's, the operation limits
 * (depth, aliases, directives), and, with introspection off, the rule that refuses it; the cost,
 * which depends on the variables, is weighed on every prepare that names them.
 */
export function documentCache(
  schema: GraphQLSchema,
  limits: OperationLimits,
  { introspection }: { introspection: boolean },
): DocumentCache {
  const rules = [...specifiedRules, ...limits.validationRules, ...(introspection ? [] : [NoSchemaIntrospectionCustomRule])];
  const prepared = new LRUCache<string, Prepared>({
    max: MAX_DOCUMENTS,
    maxSize: MAX_TOTAL_CHARS,
    maxEntrySize: MAX_CACHED_CHARS,
    sizeCalculation: (_entry, query) => Math.max(1, query.length),
  });
  return {
    prepare(query, request) {
      let entry = prepared.get(query);
      if (!entry) {
        entry = prepareOnce(schema, query, limits, rules);
        prepared.set(query, entry);
      }
      // The cost depends on the variables, so it is weighed each time, never kept with the text.
      const refused = entry.document && request ? limits.checkCost({ document: entry.document, ...request }) : null;
      return refused ? { errors: [refused] } : entry;
    },
  };
}

function prepareOnce(schema: GraphQLSchema, query: string, limits: OperationLimits, rules: typeof specifiedRules): Prepared {
  let document: DocumentNode;
  try {
    document = parse(query, limits.parseOptions);
  } catch (err) {
    if (err instanceof GraphQLError) return { errors: [err] };
    throw err;
  }
  const errors = validate(schema, document, rules);
  return errors.length ? { errors } : { document };
}
