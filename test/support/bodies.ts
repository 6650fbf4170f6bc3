import type { ErrorBody } from '../../src/http/error-body.js';
import type { CreditEntryType } from '../../src/graphql/credits/credit.graphql.js';
import type { SessionView } from '../../src/modules/sessions/session.service.js';
import type { JobBody as JobBodyOfJob } from '../../src/modules/jobs/job.view.js';
import type { ParseResponse } from '../../src/modules/parse/parse.service.js';
import type { TranscriptionResponse } from '../../src/modules/transcription/transcription.service.js';
import type { TestResponse } from './harness.js';

/** A value as it arrives in JSON: dates are strings, `undefined` members are absent. */
export type Json<T> = T extends Date ? string : T extends (infer U)[] ? Json<U>[] : T extends object ? { [K in keyof T]: Json<T[K]> } : T;

/** POST /api/parse (and the parse mutation) on success: the service's own type, as JSON. */
export type ParseBody = Json<ParseResponse>;
/** POST /api/transcribe (and the transcribe mutation) on success, as JSON. */
export type TranscriptionBody = Json<TranscriptionResponse>;
/**
 * GET /api/jobs/{id}, a 202's body, and what webhooks deliver, as JSON; `R` is the result once
 * SUCCEEDED (a transcription job's is the TranscriptionBody).
 */
export type JobBody<R = Record<string, unknown>> = Omit<Json<JobBodyOfJob>, 'result'> & { result: R | null };
/** The one REST error body: `{ error: { code, message, details?, requestId } }`. */
export type { ErrorBody };

/** A GraphQL error as the gateway formats it: the contract's code in `extensions.code`. */
export interface GqlError {
  message: string;
  path?: (string | number)[];
  extensions: { code: string; details?: Record<string, unknown>; [key: string]: unknown };
}

/** The body of a successful parse. */
export function parseBody(res: TestResponse): ParseBody {
  return res.json<ParseBody>();
}

/** The body of a successful (waited for) transcription. */
export function transcriptionBody(res: TestResponse): TranscriptionBody {
  return res.json<TranscriptionBody>();
}

/** A job as REST shows it (`R`: its result's shape). */
export function jobBody<R = Record<string, unknown>>(res: TestResponse): JobBody<R> {
  return res.json<JobBody<R>>();
}

/** The error body, checked to have the one shape every REST error has (a code, a message, the request's id). */
export function errorBody(res: TestResponse): ErrorBody {
  const body = res.json<ErrorBody>();
  expect(body).toEqual({
    error: expect.objectContaining({ code: expect.any(String), message: expect.any(String), requestId: expect.any(String) }),
  });
  return body;
}

/** A GraphQL connection as it arrives: its edges, each with a node (and a cursor when asked). */
export interface Connection<N> {
  edges: { cursor?: string; node: N }[];
  pageInfo?: { hasNextPage: boolean; endCursor: string | null };
}

/** A connection asked with its pageInfo, to page on. */
export type PagedConnection<N> = Connection<N> & { pageInfo: NonNullable<Connection<N>['pageInfo']> };

/** A ledger entry as GraphQL gives it (CreditEntry: creditHistory's nodes, a task's entries), as JSON. */
export type CreditEntryNode = Json<CreditEntryType>;

/** The nodes of a connection, in order. */
export const nodesOf = <N>(c: Connection<N>): N[] => c.edges.map((e) => e.node);

/**
 * What either door answers to one operation, read before knowing which: the REST body (success
 * `T` or the error body) or GraphQL's `{ data: { [field]: T }, errors }`.
 */
export type EitherDoorBody<T> = Partial<T> & {
  error?: ErrorBody['error'];
  data?: Record<string, T> | null;
  errors?: GqlError[];
};

/** A GraphQL response body read whole over HTTP (`data` as the query names it). */
export interface GqlBody<T = unknown> {
  data: T;
  errors?: GqlError[];
}

/** A GraphQL refusal read whole over HTTP: the errors are there (data null or partial). */
export interface GqlRefusal {
  data: unknown;
  errors: GqlError[];
}

/** GET/POST /account/api/session: the signed-in session as the account page sees it, as JSON. */
export type SessionBody = Json<SessionView>;
