import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { Agent, request } from 'undici';
import { keyMatches, parseKey } from '../src/modules/api-keys/api-key.format.js';
import { announce, PAGE_CONNECTIONS, PAGE_REQUEST_HEADERS, readBody, sendJson } from './bench-http.js';

/**
 * Reference (b): the obvious hand-written parse pipeline in raw `pg`, on its own copy of the
 * gateway's tables (schema BENCH_SCHEMA) in the same database, with a pool as large as the
 * gateway's. Per request, three statements: the key lookup (public id, then the HMAC compared in
 * constant time), ONE statement that holds the credits and opens the job, the page fetch, and ONE
 * statement that captures the hold and closes the job. The statements are the gateway's own
 * ledger statements, so what separates the two is the work around them.
 */
const env = process.env;
const S = env.BENCH_SCHEMA ?? 'bench_ref';
const pepper = env.API_KEY_PEPPER ?? '';
const price = Number(env.BENCH_PRICE ?? 1);
const pool = new pg.Pool({ connectionString: env.BENCH_DATABASE_URL, max: Number(env.BENCH_POOL_SIZE ?? 10) });
const agent = new Agent({ connections: PAGE_CONNECTIONS });

const KEY = `select k.id, k.account_id, k.secret_hash, k.scopes, k.revoked_at is not null as revoked,
                    coalesce(m.status = 'active' and m.period_end > now(), false) as member
               from ${S}.api_key k join ${S}.account a on a.id = k.account_id left join ${S}.membership m on m.account_id = k.account_id
              where k.public_id = $1`;
const OPEN = `with b as (
                update ${S}.credit_balance set available = available - $3, held = held + $3, updated_at = now()
                where account_id = $2 and available >= $3
                returning available
              ), j as (
                insert into ${S}.job (id, account_id, api_key_id, operation, status, input, hold_amount, deadline_at, started_at)
                select $1, $2, $4, 'PARSE', 'RUNNING', $5::jsonb, $3, now() + interval '60 seconds', now() from b
                returning id
              ), e as (
                insert into ${S}.credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
                select $2, 'HOLD', $3, -$3, $3, id from j
              )
              select (select available from b) as after, (select available from ${S}.credit_balance where account_id = $2) as before`;
const CAPTURE = `with j0 as (
                   select id, account_id, hold_amount from ${S}.job where id = $1 and status in ('QUEUED', 'RUNNING') for update
                 ), b as (
                   update ${S}.credit_balance c set held = c.held - j0.hold_amount, updated_at = now()
                   from j0 where c.account_id = j0.account_id
                   returning c.available
                 ), j as (
                   update ${S}.job set status = 'SUCCEEDED', result = $2::jsonb, provider = 'reference', credits_charged = hold_amount, progress = 1,
                                  finished_at = now(), balance_after = (select available from b)
                   where id = (select id from j0)
                   returning account_id, hold_amount
                 ), e as (
                   insert into ${S}.credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
                   select account_id, 'CAPTURE', hold_amount, 0, -hold_amount, $1 from j
                 )
                 select (select hold_amount from j) as charged, (select available from b) as balance`;
const RELEASE = `with j as (
                   update ${S}.job set status = 'FAILED', error_code = 'PROVIDER_ERROR', credits_charged = 0, finished_at = now()
                   where id = $1 and status in ('QUEUED', 'RUNNING')
                   returning account_id, hold_amount
                 ), b as (
                   update ${S}.credit_balance c set available = c.available + j.hold_amount, held = c.held - j.hold_amount, updated_at = now()
                   from j where c.account_id = j.account_id
                 )
                 insert into ${S}.credit_entry (account_id, kind, amount, available_delta, held_delta, job_id)
                 select account_id, 'RELEASE', hold_amount, hold_amount, -hold_amount, $1 from j`;

const error = (code: string) => ({ error: { code } });

const server = createServer(async (req, res) => {
  try {
    const parsed = parseKey(/^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '');
    if (!parsed) return sendJson(res, 401, error('UNAUTHENTICATED'));
    const input = JSON.parse(await readBody(req)) as { url?: unknown; quality?: unknown };
    if (typeof input.url !== 'string' || !/^https?:\/\//.test(input.url)) return sendJson(res, 400, error('INVALID_INPUT'));
    const url = input.url;
    const quality = typeof input.quality === 'string' ? input.quality : '1080';

    const key = (await pool.query(KEY, [parsed.publicId])).rows[0];
    if (!key || key.revoked || !keyMatches(parsed.key, key.secret_hash, pepper)) return sendJson(res, 401, error('UNAUTHENTICATED'));
    if (!key.member) return sendJson(res, 403, error('MEMBERSHIP_REQUIRED'));
    if (!(key.scopes as string[]).includes('parse')) return sendJson(res, 403, error('FORBIDDEN'));

    const jobId = randomUUID();
    const opened = (await pool.query(OPEN, [jobId, key.account_id, price, key.id, JSON.stringify({ url, mode: 'auto', quality })])).rows[0];
    if (opened.after === null) return sendJson(res, 402, error('INSUFFICIENT_CREDITS'));

    let media: { url: string; kind: string };
    try {
      const page = await request(url, { dispatcher: agent, headers: PAGE_REQUEST_HEADERS });
      const html = await page.body.text();
      // The least a parse can do with the page: take its Open Graph video.
      const found = /<meta property="og:video" content="([^"]+)"/.exec(html);
      if (page.statusCode !== 200 || !found) throw new Error(`no media (status ${page.statusCode})`);
      media = { url: found[1], kind: 'video' };
    } catch {
      await pool.query(RELEASE, [jobId]);
      return sendJson(res, 502, error('PROVIDER_ERROR'));
    }
    const result = { media, provider: 'reference' };
    const settled = (await pool.query(CAPTURE, [jobId, JSON.stringify(result)])).rows[0];
    sendJson(res, 200, {
      id: jobId,
      status: 'SUCCEEDED',
      url,
      mode: 'auto',
      quality,
      ...result,
      credits: { charged: Number(settled.charged), balance: Number(settled.balance) },
    });
  } catch (err) {
    sendJson(res, 500, { error: { code: 'INTERNAL_ERROR', message: String(err) } });
  }
});
server.listen(0, '127.0.0.1', () => announce((server.address() as AddressInfo).port));
