import pg from 'pg';
import { ERROR_CATALOGUE, type ErrorCode } from '../../src/errors.js';
import type { Harness } from './harness.js';
import { waitFor } from './wait-for.js';
import type { EitherDoorBody, ParseBody } from './bodies.js';

/** The two doors one operation goes through. */
export type Door = 'rest' | 'graphql';

/** The parse mutation asking for what a probe reads of the media (size, length, codecs, sound), with the charge. */
export const PROBED_PARSE = `mutation($input: ParseInput!) { parse(input: $input) {
  status media { url kind width height durationSeconds codecs hasAudio } credits { charged balance } } }`;

/** What one parse answered, whichever door it went through: the status (GraphQL's error code mapped as REST maps it). */
export interface DoorAnswer {
  status: number;
  code?: string;
  details?: Record<string, unknown>;
  credits?: { charged: number; balance: number };
}

/** One parse of `url`, through REST or GraphQL, at `base` (a harness's URL, or another instance's). */
export async function parseThrough(
  door: Door,
  base: string,
  key: string,
  url: string,
  headers: Record<string, string> = {},
): Promise<DoorAnswer> {
  const rest = door === 'rest';
  const res = await fetch(`${base}${rest ? '/api/parse' : '/graphql'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(
      rest
        ? { url }
        : {
            query: `mutation($url: String!) { parse(input: { url: $url }) { id status credits { charged balance } } }`,
            variables: { url },
          },
    ),
  });
  const body = (await res.json()) as EitherDoorBody<ParseBody>;
  if (rest)
    return res.status === 200
      ? { status: 200, credits: body.credits }
      : { status: res.status, code: body.error?.code, details: body.error?.details };
  const error = body.errors?.[0];
  if (!error) return { status: 200, credits: body.data?.parse.credits };
  const code = error.extensions.code as ErrorCode;
  return { status: ERROR_CATALOGUE[code]?.status ?? 500, code, details: error.extensions.details };
}

/**
 * An account with a key (as Harness.account), returned once this instance has heard the database's
 * notifications of its making: a key cached after that stays cached until something changes.
 */
export async function heardAccount(h: Harness, opts: Parameters<Harness['account']>[0] = {}): ReturnType<Harness['account']> {
  const heard = new Set<string>();
  const stop = h.notifications.on('mediagate_auth', (n) => void (n.apiKeyId && heard.add(n.apiKeyId)));
  try {
    const account = await h.account(opts);
    await waitFor(() => heard.has(account.keyId), { describe: 'the notification of the new key', timeout: 5_000, interval: 10 });
    return account;
  } finally {
    stop();
  }
}

/**
 * Changes rows with the database's triggers off for this one transaction, so that no notification
 * tells any instance about it: what an instance that missed a notification would live through.
 */
export async function changeUnheard(h: Harness, sql: string, params: unknown[]): Promise<void> {
  const client = new pg.Client({ connectionString: h.clientUrl });
  await client.connect();
  try {
    await client.query('begin');
    await client.query('set local session_replication_role = replica');
    await client.query(sql, params);
    await client.query('commit');
  } finally {
    await client.end();
  }
}

/** How many statements wrote an account's ledger entries of a kind: the rows one statement inserts share its transaction id. */
export async function statementsOf(
  h: Harness,
  accountIds: string[],
  kind: 'HOLD' | 'CAPTURE',
): Promise<{ entries: number; statements: number }> {
  const [row] = await h.sql<{ entries: string; statements: string }>(
    `select count(*) as entries, count(distinct xmin::text) as statements from credit_entry where kind = ? and account_id in (${accountIds.map(() => '?').join(', ')})`,
    [kind, ...accountIds],
  );
  return { entries: Number(row.entries), statements: Number(row.statements) };
}
