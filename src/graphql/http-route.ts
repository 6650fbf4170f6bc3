import Negotiator from 'negotiator';
import { HeaderMap, type ApolloServer } from '@apollo/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { isAppError } from '../errors.js';
import { httpRequestContext, principalOf } from '../http/credentials.js';
import type { Services } from '../modules/services.js';
import { CSRF_PREFLIGHT_HEADERS } from './apollo.js';
import { createGqlContext, type GqlContext } from './context.js';
import { answerType, bodyOf, fromBody, fromQueryString, RequestRefused, searchOf, type RequestParams } from './http-request.js';
import type { TrustedDocuments } from './persisted-documents.js';

export interface GraphqlHttpOptions {
  apollo: ApolloServer<GqlContext>;
  services: Services;
  trusted: TrustedDocuments;
  /** Whether Apollo serves a landing page (outside production). */
  landingPage: boolean;
}

/**
 * GraphQL over HTTP at /graphql, POST and GET (queries only), per the GraphQL-over-HTTP
 * specification, served by Apollo Server (apollo.ts) from this route. Before Apollo sees a request,
 * the route refuses what cannot run in the contract's words (400 INVALID_INPUT: parameters, a batch,
 * an untrusted document in trusted-only mode) and picks the answer's media type (the caller's
 * preferred one of the two JSON types; JSON when it names neither, where Apollo would answer 406).
 * After, it makes every answer uncacheable (every answer is the caller's own data). HEAD is 405.
 */
export function registerGraphqlHttp(app: FastifyInstance, { apollo, services, trusted, landingPage }: GraphqlHttpOptions): void {
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const get = req.method === 'GET';
    const html = landingPage && get && prefersHtml(req.headers.accept);
    const type = answerType(req.headers.accept);
    let admitted: RequestParams | null = null;
    if (!html) {
      const params = get ? fromQueryString(req.query) : fromBody(req.body);
      if (params instanceof RequestRefused) return refuse(reply, type, params);
      admitted = params;
      const hash = (params.extensions?.persistedQuery as { sha256Hash?: unknown } | undefined)?.sha256Hash;
      try {
        await trusted.admit(params.query, hash, () => principalOf(services.auth, req));
      } catch (err) {
        if (!isAppError(err)) throw err;
        return refuse(reply, type, new RequestRefused(400, err.message));
      }
    }
    const headers = new HeaderMap([['accept', html ? 'text/html' : type]]);
    if (!get && typeof req.headers['content-type'] === 'string') headers.set('content-type', req.headers['content-type']);
    for (const name of CSRF_PREFLIGHT_HEADERS) {
      const value = req.headers[name];
      if (typeof value === 'string') headers.set(name, value);
    }
    // A GET runs a query only (a mutation is 405), which the contract lets run as it comes, a session
    // cookie's too: the cookie is SameSite=Strict and a read changes nothing. Apollo's CSRF rule is
    // for requests that may change something (POST: there, only JSON bodies are ever parsed).
    if (get) headers.set('apollo-require-preflight', 'get');
    // Apollo is handed exactly the parameters checked above, never the raw URL or body: where the
    // two would read a request differently (a `#` in the target, a repeated parameter, fields the
    // check does not look at), Apollo would run what the check never saw.
    const request = html ? null : admitted;
    const response = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: {
        method: req.method,
        headers,
        search: get && request ? `?${searchOf(request)}` : '',
        body: get || !request ? undefined : bodyOf(request),
      },
      // Apollo copies the context's own properties for each operation; the loaders are made on
      // first use (context.ts), so everything is reached through the prototype instead.
      context: async () => Object.create(createGqlContext(httpRequestContext(services.auth, req), services)) as GqlContext,
    });
    reply.status(response.status ?? 200);
    for (const [name, value] of response.headers)
      reply.header(name, name === 'content-type' && value === 'text/html' ? 'text/html; charset=utf-8' : value);
    reply.header('cache-control', 'no-store');
    if (response.body.kind === 'complete') return reply.send(response.body.string);
    return reply.send(Readable.from(response.body.asyncIterator));
  };

  app.route({ method: ['GET', 'POST'], url: '/graphql', exposeHeadRoute: false, handler });
  app.route({
    method: 'HEAD',
    url: '/graphql',
    handler: async (_req, reply) => reply.status(405).header('allow', 'GET, POST').header('cache-control', 'no-store').send(),
  });
}

function refuse(reply: FastifyReply, type: string, refusal: RequestRefused) {
  const body = { errors: [{ message: refusal.message, extensions: { code: 'INVALID_INPUT' } }] };
  return reply.status(refusal.status).headers(refusal.headers).header('cache-control', 'no-store').type(type).send(JSON.stringify(body));
}

/** A browser's request: HTML named, and weighed at least as much as either JSON type (the same negotiator as the REST door's). */
function prefersHtml(accept: string | undefined): boolean {
  if (!accept?.includes('text/html')) return false;
  const [best] = new Negotiator({ headers: { accept } }).mediaTypes(['text/html', 'application/graphql-response+json', 'application/json']);
  return best === 'text/html';
}
