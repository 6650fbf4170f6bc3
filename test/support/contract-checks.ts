import { ERROR_CATALOGUE, ERROR_CODES, type ErrorCode } from '../../src/errors.js';
import type { Harness, TestResponse } from './harness.js';

/** A contract deviation, described for the fuzzer's report (thrown so fast-check can shrink on it). */
export class ContractViolation extends Error {}

const fail = (why: string, res: { statusCode: number; body: string }): never => {
  throw new ContractViolation(`${why} (status ${res.statusCode}, body ${res.body.slice(0, 400)})`);
};

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The one REST error body, exactly: `{ error: { code, message, details?, requestId } }`, a code
 * from the catalogue that is not the masked bug code, and the status the contract gives that code.
 * Returns the code.
 */
export function checkRestError(res: TestResponse): ErrorCode {
  if (res.statusCode >= 500 && res.statusCode !== 503 && res.statusCode !== 504 && res.statusCode !== 502)
    fail('a 5xx outside the contract', res);
  if (!/^application\/json\b/.test(res.headers['content-type'] ?? '')) fail('an error that is not JSON', res);
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    return fail('an error body that does not parse', res);
  }
  if (!isPlainObject(body) || Object.keys(body).join() !== 'error' || !isPlainObject(body.error)) fail('not the { error } shape', res);
  const error = (body as { error: Record<string, unknown> }).error;
  const extra = Object.keys(error).filter((k) => !['code', 'message', 'details', 'requestId'].includes(k));
  if (extra.length) fail(`unexpected fields ${extra.join(', ')}`, res);
  if (typeof error.message !== 'string' || !error.message) fail('no message', res);
  if (typeof error.requestId !== 'string' || error.requestId !== res.headers['x-request-id'])
    fail('requestId missing or not the x-request-id', res);
  if ('details' in error && !isPlainObject(error.details)) fail('details is not an object', res);
  if (!ERROR_CODES.includes(error.code as ErrorCode)) fail(`unknown code ${String(error.code)}`, res);
  const code = error.code as ErrorCode;
  if (code === 'INTERNAL_ERROR') fail('INTERNAL_ERROR (a bug)', res);
  if (ERROR_CATALOGUE[code].status !== res.statusCode)
    fail(`status ${res.statusCode} for ${code} (the contract says ${ERROR_CATALOGUE[code].status})`, res);
  if (code === 'RATE_LIMITED' && !/^\d+$/.test(res.headers['retry-after'] ?? '')) fail('429 without Retry-After', res);
  return code;
}

/**
 * A GraphQL answer: JSON with `data` and/or `errors`; each error `{ message, locations?, path?,
 * extensions: { code, details? } }` with a catalogue code other than INTERNAL_ERROR. A request the
 * HTTP layer refused before GraphQL (415, 429, a body that is not JSON) has the REST error body.
 * Returns the codes seen.
 */
export function checkGraphqlAnswer(res: TestResponse, method: string = 'POST'): ErrorCode[] {
  if (res.statusCode >= 500) fail('a 5xx from GraphQL', res);
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    return fail('a GraphQL answer that does not parse', res);
  }
  if (isPlainObject(body) && 'error' in body) return [checkRestError(res)];
  if (!isPlainObject(body)) return fail('a GraphQL answer that is not an object', res);
  const extra = Object.keys(body).filter((k) => !['data', 'errors', 'extensions'].includes(k));
  if (extra.length) fail(`unexpected top-level fields ${extra.join(', ')}`, res);
  if (!('data' in body) && !('errors' in body)) fail('neither data nor errors', res);
  if (!('errors' in body)) {
    if (res.statusCode !== 200) fail('a non-200 answer without errors', res);
    return [];
  }
  if (!Array.isArray(body.errors) || body.errors.length === 0) return fail('errors is not a non-empty list', res);
  const codes = body.errors.map((e: unknown) => {
    if (!isPlainObject(e)) return fail('an error that is not an object', res);
    const extraKeys = Object.keys(e).filter((k) => !['message', 'locations', 'path', 'extensions'].includes(k));
    if (extraKeys.length) fail(`error fields ${extraKeys.join(', ')}`, res);
    if (typeof e.message !== 'string' || !e.message) fail('an error without message', res);
    if (!isPlainObject(e.extensions)) return fail('an error without extensions', res);
    const extKeys = Object.keys(e.extensions).filter((k) => !['code', 'details'].includes(k));
    if (extKeys.length) fail(`extensions fields ${extKeys.join(', ')} (a stack or upstream text?)`, res);
    const code = e.extensions.code as ErrorCode;
    if (!ERROR_CODES.includes(code)) fail(`unknown code ${String(code)}`, res);
    if (code === 'INTERNAL_ERROR') fail('INTERNAL_ERROR (a bug)', res);
    if ('details' in e.extensions && !isPlainObject(e.extensions.details)) fail('details is not an object', res);
    return code;
  });
  // A request GraphQL could not execute at all (syntax, validation, variables) is a 400 of input
  // errors only; once executed, the answer is 200 whatever the resolvers threw. One exception is
  // the protocol's own: GraphQL-over-HTTP's 405 for a mutation sent with GET.
  if ('data' in body) {
    if (res.statusCode !== 200) fail('an executed operation answered with a non-200 status', res);
    return codes;
  }
  if (codes.some((c: ErrorCode) => c !== 'INVALID_INPUT')) fail('a request error other than INVALID_INPUT', res);
  const messages = (body.errors as { message: string }[]).map((e) => e.message);
  const allowed = method === 'GET' && /^GET requests only support query operations/.test(messages[0]) ? 405 : 400;
  if (res.statusCode !== allowed) fail(`a request error answered ${res.statusCode}, not ${allowed}`, res);
  return codes;
}

/** What the ledger and the jobs say of one account at one moment. */
export interface AccountSnapshot {
  available: number;
  held: number;
  /** The credit_entry sums: they must equal the balance. */
  entryAvailable: number;
  entryHeld: number;
  entries: number;
  jobs: number;
  openJobs: number;
  /** Holds of QUEUED and RUNNING jobs: they must equal `held`. */
  openHolds: number;
  /** Credits captured by SUCCEEDED jobs. */
  captured: number;
  /** Jobs that ended without success yet charged something: must stay 0. */
  chargedFailures: number;
  granted: number;
}

/** One query for every account asked about. */
export async function snapshot(h: Harness, accountIds: readonly string[]): Promise<Map<string, AccountSnapshot>> {
  const rows = await h.sql<Record<string, string>>(
    `select a.id,
            coalesce(b.available, 0) as available, coalesce(b.held, 0) as held,
            (select coalesce(sum(available_delta), 0) from credit_entry e where e.account_id = a.id) as entry_available,
            (select coalesce(sum(held_delta), 0) from credit_entry e where e.account_id = a.id) as entry_held,
            (select count(*) from credit_entry e where e.account_id = a.id) as entries,
            (select coalesce(sum(amount), 0) from credit_entry e where e.account_id = a.id and kind = 'GRANT') as granted,
            (select count(*) from job j where j.account_id = a.id) as jobs,
            (select count(*) from job j where j.account_id = a.id and status in ('QUEUED', 'RUNNING')) as open_jobs,
            (select coalesce(sum(hold_amount), 0) from job j where j.account_id = a.id and status in ('QUEUED', 'RUNNING')) as open_holds,
            (select coalesce(sum(credits_charged), 0) from job j where j.account_id = a.id and status = 'SUCCEEDED') as captured,
            (select count(*) from job j where j.account_id = a.id and status <> 'SUCCEEDED' and credits_charged <> 0) as charged_failures
       from account a left join credit_balance b on b.account_id = a.id
      where a.id = any(?::uuid[])`,
    [`{${accountIds.join(',')}}`],
  );
  return new Map(
    rows.map((r) => [
      r.id,
      {
        available: Number(r.available),
        held: Number(r.held),
        entryAvailable: Number(r.entry_available),
        entryHeld: Number(r.entry_held),
        entries: Number(r.entries),
        granted: Number(r.granted),
        jobs: Number(r.jobs),
        openJobs: Number(r.open_jobs),
        openHolds: Number(r.open_holds),
        captured: Number(r.captured),
        chargedFailures: Number(r.charged_failures),
      },
    ]),
  );
}

/**
 * The ledger's invariants for one account: entries sum to the balance, nothing negative, the open
 * jobs' holds are what is held, every credit granted is available, held or captured, and no job
 * that did not succeed charged anything.
 */
export function checkLedger(accountId: string, s: AccountSnapshot): void {
  const problems: string[] = [];
  if (s.entryAvailable !== s.available || s.entryHeld !== s.held)
    problems.push(`entries sum to ${s.entryAvailable}/${s.entryHeld}, balance is ${s.available}/${s.held}`);
  if (s.available < 0 || s.held < 0) problems.push('a negative balance');
  if (s.openHolds !== s.held) problems.push(`open jobs hold ${s.openHolds}, the balance holds ${s.held}`);
  if (s.available + s.held + s.captured !== s.granted)
    problems.push(`granted ${s.granted} ≠ available ${s.available} + held ${s.held} + captured ${s.captured}`);
  if (s.chargedFailures) problems.push(`${s.chargedFailures} unsuccessful job(s) charged`);
  if (problems.length) throw new ContractViolation(`ledger of ${accountId}: ${problems.join('; ')}`);
}
