import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { getOperationAST, type ExecutionResult, type GraphQLError, type GraphQLFormattedError } from 'graphql';
import { httpRequestContext } from '../http/credentials.js';
import type { Services } from '../modules/services.js';
import { createGqlContext } from './context.js';
import type { DocumentCache } from './documents.js';
import type { Executor } from './jit-executor.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const GRAPHQL_RESPONSE_TYPE = 'application/graphql-response+json; charset=utf-8';

export interface GraphqlHttpOptions {
  services: Services;
  documents: DocumentCache;
  execute: Executor;
  /** The one GraphQL error mapper (errors.ts), suggestions dropped when introspection is off. */
  format(error: GraphQLError): GraphQLFormattedError;
  /** The page a browser gets at GET /graphql (null: none, as in production). */
  landingPage: string | null;
}

/** What a GraphQL-over-HTTP request asks: from a POST's JSON body or a GET's query string. */
interface RequestParams {
  query: string;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
}

/** A request GraphQL cannot run at all: its status and its one error's message. */
class RequestRefused {
  constructor(
    readonly status: number,
    readonly message: string,
    readonly headers: Record<string, string> = {},
  ) {}
}

/**
 * GraphQL over HTTP at /graphql, POST and GET (queries only), per the GraphQL-over-HTTP
 * specification, with the contract's statuses: a request that cannot run (its parameters, syntax,
 * validation, limits, variables, an unknown operation) is 400 with errors coded INVALID_INPUT, an
 * executed one is 200 whatever its resolvers threw, a mutation sent with GET is 405. The answer is
 * `application/graphql-response+json` when the caller prefers it, else `application/json`; never
 * cacheable (every answer is the caller's own data).
 *
 * Parsing and validation are cached per document text (documents.ts, shared with the WebSocket door)
 * and repeated documents run compiled (jit-executor.ts): per request this does what REST does plus
 * a lookup and the execution, which is why it is not Apollo Server (whose pipeline cost more CPU
 * than everything else GraphQL adds to a parse).
 */
export function registerGraphqlHttp(app: FastifyInstance, { services, documents, execute, format, landingPage }: GraphqlHttpOptions): void {
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const accept = req.headers.accept;
    // GET, or HEAD (Fastify answers it with the GET route, without the body).
    const get = req.method !== 'POST';
    if (landingPage !== null && get && prefersHtml(accept)) {
      return reply.header('cache-control', 'no-store').type('text/html; charset=utf-8').send(landingPage);
    }
    const type = answerType(accept);
    const params = get ? fromQueryString(req.query) : fromBody(req.body);
    if (params instanceof RequestRefused) return refuse(reply, type, params);
    const prepared = documents.prepare(params.query);
    if (!prepared.document) return answer(reply, type, 400, { errors: prepared.errors.map(format) });
    const operation = getOperationAST(prepared.document, params.operationName);
    if (operation?.operation === 'subscription') {
      return refuse(reply, type, new RequestRefused(400, 'Subscriptions run over WebSocket (graphql-transport-ws) at /graphql, not over HTTP.'));
    }
    if (operation?.operation === 'mutation' && get) {
      return refuse(reply, type, new RequestRefused(405, 'GET requests only support query operations; send a mutation with POST.', { allow: 'POST' }));
    }
    const context = createGqlContext(httpRequestContext(services.auth, req), services);
    const result = await execute({ document: prepared.document, operationName: params.operationName, variables: params.variables, context });
    // No data at all: nothing ran (variables refused, no such operation), a request error.
    const status = 'data' in result ? 200 : 400;
    return answer(reply, type, status, result.errors ? { ...result, errors: result.errors.map(format) } : result);
  };

  app.route({ method: ['GET', 'POST'], url: '/graphql', handler });
}

function answer(reply: FastifyReply, type: string, status: number, body: ExecutionResult | { errors: GraphQLFormattedError[] }) {
  return reply.status(status).header('cache-control', 'no-store').type(type).send(JSON.stringify(body));
}

function refuse(reply: FastifyReply, type: string, refusal: RequestRefused) {
  return answer(reply.headers(refusal.headers), type, refusal.status, { errors: [{ message: refusal.message, extensions: { code: 'INVALID_INPUT' } }] });
}

function fromBody(body: unknown): RequestParams | RequestRefused {
  if (Array.isArray(body)) return new RequestRefused(400, 'Batched operations are not supported: send one operation per request.');
  if (typeof body !== 'object' || body === null) return new RequestRefused(400, 'The body must be a JSON object with a query.');
  const { query, operationName, variables } = body as Record<string, unknown>;
  return checked(query, operationName, variables);
}

function fromQueryString(search: unknown): RequestParams | RequestRefused {
  const { query, operationName, variables } = (search ?? {}) as Record<string, unknown>;
  let parsed: unknown = variables;
  if (typeof variables === 'string' && variables !== '') {
    try {
      parsed = JSON.parse(variables);
    } catch {
      return new RequestRefused(400, 'variables must be a JSON object.');
    }
  }
  return checked(query, operationName === '' ? undefined : operationName, variables === '' ? undefined : parsed);
}

function checked(query: unknown, operationName: unknown, variables: unknown): RequestParams | RequestRefused {
  if (typeof query !== 'string' || query.trim() === '') return new RequestRefused(400, 'A GraphQL request needs a query: a non-empty string.');
  if (operationName != null && typeof operationName !== 'string') return new RequestRefused(400, 'operationName must be a string.');
  if (variables != null && (typeof variables !== 'object' || Array.isArray(variables))) return new RequestRefused(400, 'variables must be a JSON object.');
  return { query, operationName: operationName as string | null | undefined, variables: variables as Record<string, unknown> | null | undefined };
}

/** Each media range of an Accept header with its weight (q, 1 when not given). */
function ranges(accept: string): { type: string; q: number }[] {
  return accept.split(',').map((range) => {
    const [type, ...params] = range.split(';').map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    return { type, q: q ? Number(q.slice(2)) || 0 : 1 };
  });
}

/**
 * The answer's media type: GraphQL-over-HTTP's own when the caller weighs it above plain JSON, else
 * JSON, also for an Accept naming neither: the specification lets a server disregard an Accept it
 * cannot satisfy rather than answer 406, which the contract does not have (the REST door does the same).
 */
function answerType(accept: string | undefined): string {
  if (!accept?.includes('graphql-response')) return JSON_TYPE;
  let best = { type: JSON_TYPE, q: 0 };
  for (const { type, q } of ranges(accept)) {
    const media = type === 'application/graphql-response+json' ? GRAPHQL_RESPONSE_TYPE : type === 'application/json' ? JSON_TYPE : null;
    if (media && q > best.q) best = { type: media, q };
  }
  return best.type;
}

/** A browser's request: HTML named and weighed at least as much as any JSON type named. */
function prefersHtml(accept: string | undefined): boolean {
  if (!accept?.includes('text/html')) return false;
  let html = 0;
  let json = 0;
  for (const { type, q } of ranges(accept)) {
    if (type === 'text/html') html = Math.max(html, q);
    else if (type === 'application/json' || type === 'application/graphql-response+json') json = Math.max(json, q);
  }
  return html > 0 && html >= json;
}
