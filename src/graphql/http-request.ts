/**
 * What a GraphQL-over-HTTP request asks, read and checked before Apollo Server sees it, so that a
 * request that cannot run is refused in the contract's words (400 INVALID_INPUT, with the same
 * messages as ever), and the answer's media type is the one the caller weighs most.
 */
import Negotiator from 'negotiator';

export const JSON_TYPE = 'application/json; charset=utf-8';
export const GRAPHQL_RESPONSE_TYPE = 'application/graphql-response+json; charset=utf-8';

/** The parameters of one request: from a POST's JSON body or a GET's query string. */
export interface RequestParams {
  /** Absent only when `extensions.persistedQuery` names the document by its hash. */
  query?: string;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
  extensions?: Record<string, unknown> | null;
}

/** A request GraphQL cannot run at all: its status and its one error's message. */
export class RequestRefused {
  constructor(
    readonly status: number,
    readonly message: string,
    readonly headers: Record<string, string> = {},
  ) {}
}

export function fromBody(body: unknown): RequestParams | RequestRefused {
  if (Array.isArray(body)) return new RequestRefused(400, 'Batched operations are not supported: send one operation per request.');
  if (typeof body !== 'object' || body === null) return new RequestRefused(400, 'The body must be a JSON object with a query.');
  const { query, operationName, variables, extensions } = body as Record<string, unknown>;
  return checked(query, operationName, variables, extensions);
}

export function fromQueryString(search: unknown): RequestParams | RequestRefused {
  const { query, operationName, variables, extensions } = (search ?? {}) as Record<string, unknown>;
  const json = (value: unknown, name: string): unknown => {
    if (typeof value !== 'string' || value === '') return value === '' ? undefined : value;
    try {
      return JSON.parse(value);
    } catch {
      return new RequestRefused(400, `${name} must be a JSON object.`);
    }
  };
  const vars = json(variables, 'variables');
  if (vars instanceof RequestRefused) return vars;
  const exts = json(extensions, 'extensions');
  if (exts instanceof RequestRefused) return exts;
  return checked(query, operationName === '' ? undefined : operationName, vars, exts);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function checked(query: unknown, operationName: unknown, variables: unknown, extensions: unknown): RequestParams | RequestRefused {
  if (extensions != null && !isObject(extensions)) return new RequestRefused(400, 'extensions must be a JSON object.');
  const byHash = query == null && extensions?.persistedQuery != null;
  if (!byHash && (typeof query !== 'string' || query.trim() === ''))
    return new RequestRefused(400, 'A GraphQL request needs a query: a non-empty string.');
  if (operationName != null && typeof operationName !== 'string') return new RequestRefused(400, 'operationName must be a string.');
  if (variables != null && !isObject(variables)) return new RequestRefused(400, 'variables must be a JSON object.');
  return {
    query: byHash ? undefined : (query as string),
    operationName: operationName as string | null | undefined,
    variables: variables as Record<string, unknown> | null | undefined,
    extensions: extensions as Record<string, unknown> | null | undefined,
  };
}

/** A GET's query string made from checked parameters (objects as JSON), the only one Apollo reads. */
export function searchOf(params: RequestParams): string {
  const search = new URLSearchParams();
  if (params.query !== undefined) search.set('query', params.query);
  if (params.operationName != null) search.set('operationName', params.operationName);
  if (params.variables != null) search.set('variables', JSON.stringify(params.variables));
  if (params.extensions != null) search.set('extensions', JSON.stringify(params.extensions));
  return search.toString();
}

/** A POST's body made from checked parameters: nothing else of what the caller sent reaches Apollo. */
export function bodyOf(params: RequestParams): Record<string, unknown> {
  return Object.fromEntries(Object.entries(params).filter(([, value]) => value !== undefined));
}

/** Each media range of an Accept header with its weight (q, 1 when not given). */

/**
 * The answer's media type: GraphQL-over-HTTP's own when the caller weighs it above plain JSON, else
 * JSON, also for an Accept naming neither: the specification lets a server disregard an Accept it
 * cannot satisfy rather than answer 406, which the contract does not have (the REST door does the same).
 */
export function answerType(accept: string | undefined): string {
  if (!accept?.includes('graphql-response')) return JSON_TYPE;
  const [best] = new Negotiator({ headers: { accept } }).mediaTypes(['application/graphql-response+json', 'application/json']);
  return best === 'application/graphql-response+json' ? GRAPHQL_RESPONSE_TYPE : JSON_TYPE;
}
