import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createHarness, type Harness, type TestResponse } from '../support/harness.js';
import { createTestDatabase } from '../support/test-database.js';
import { openOrm } from '../../src/root.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { RENDITIONS_PAGE } from '../support/factories.js';
import { parseSetCookie } from '../support/set-cookie.js';
import { pino } from 'pino';
import { OPERATOR } from '../../src/modules/principal.js';
import type { ErrorBody, GqlBody, GqlRefusal, SessionBody } from '../support/bodies.js';

const CSRF_REFUSAL = { code: 'FORBIDDEN', message: 'Missing or wrong CSRF token.' };
const tokenOf = (url: string) => /#login=([A-Za-z0-9_-]+)$/.exec(url)![1];
/** The `name=value` part of a Set-Cookie header, as a browser sends it back. */
const cookiePart = (res: TestResponse) => res.headers['set-cookie'].split(';')[0];

/** Sign-in to the account area with a login link, the session cookie, and CSRF protection, through HTTP. */
describe('account area sessions (login links)', () => {
  let h: Harness;
  let site: FakeSite;
  beforeAll(async () => {
    site = await startFakeSite();
    site.page('/v', RENDITIONS_PAGE);
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort });
  });
  afterAll(async () => {
    await h.close();
    await site.close();
  });

  const exchange = (token: unknown, headers: Record<string, string> = {}) =>
    h.request('POST', '/account/api/session', {
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ token }),
    });

  const signIn = async (opts: { member?: boolean; credits?: number } = {}) => {
    const account = await h.services.accounts.create(OPERATOR, {
      name: 'Ada',
      credits: opts.credits ?? 5,
      membershipDays: opts.member ? 30 : undefined,
    });
    const link = await h.services.sessions.createLoginLink(OPERATOR, account.id);
    const res = await exchange(tokenOf(link.url));
    expect(res.statusCode).toBe(200);
    return { accountId: account.id, link, res, cookie: cookiePart(res), csrf: res.json<SessionBody>().csrfToken as string };
  };

  const gqlWith = (query: string, headers: Record<string, string>) =>
    h.request('POST', '/graphql', { headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query }) });

  it('makes a link to /account with the token in the fragment, and exchanges it for a __Host- cookie: Secure, HttpOnly, SameSite=Strict, Path=/, no Domain', async () => {
    const before = Date.now();
    const { accountId, link, res, cookie, csrf } = await signIn();
    expect(link.url).toMatch(/^http:\/\/localhost:4000\/account\/#login=[A-Za-z0-9_-]{43}$/);
    expect(link.expiresAt.getTime()).toBeGreaterThan(before + 9 * 60_000);
    expect(link.expiresAt.getTime()).toBeLessThan(before + 11 * 60_000);

    const body = res.json<SessionBody>();
    expect(body).toEqual({
      csrfToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      expiresAt: expect.any(String),
      account: { id: accountId, name: 'Ada' },
    });
    expect(Math.abs(new Date(body.expiresAt).getTime() - (Date.now() + 8 * 3600_000))).toBeLessThan(60_000);
    expect(res.headers['cache-control']).toBe('no-store');

    const setCookie = parseSetCookie(res.headers['set-cookie']);
    expect(cookie).toMatch(/^__Host-mg_session=[A-Za-z0-9_-]{43}$/);
    // Browsers keep a __Host- cookie only when it is Secure, for Path=/ and without Domain: no
    // sibling subdomain and no plain-http hop can set one.
    expect(setCookie).toEqual({
      name: '__Host-mg_session',
      value: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      attributes: { 'max-age': '28800', path: '/', httponly: true, secure: true, samesite: 'Strict' },
    });
    expect(res.headers['set-cookie']).not.toContain(csrf);

    // The page recovers its CSRF token after a reload.
    const again = await h.request('GET', '/account/api/session', { headers: { cookie } });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ csrfToken: csrf, expiresAt: body.expiresAt, account: { id: accountId, name: 'Ada' } });
  });

  it('answers GraphQL with the cookie: a query over GET as is, anything over POST only with the CSRF token', async () => {
    const { accountId, cookie, csrf } = await signIn();
    const get = await h.request('GET', `/graphql?query=${encodeURIComponent('{ me { id name } }')}`, { headers: { cookie } });
    expect(get.statusCode).toBe(200);
    expect(get.json<GqlBody<{ me: unknown }>>().data.me).toEqual({ id: accountId, name: 'Ada' });

    const post = await gqlWith('{ me { id name } }', { cookie, 'x-csrf-token': csrf });
    expect(post.statusCode).toBe(200);
    expect(post.json()).toEqual({ data: { me: { id: accountId, name: 'Ada' } } });

    const noCsrf = await gqlWith('{ me { id name } }', { cookie });
    expect(noCsrf.statusCode).toBe(403);
    expect(noCsrf.json<GqlRefusal>().errors[0]).toMatchObject({ message: CSRF_REFUSAL.message, extensions: { code: 'FORBIDDEN' } });
  });

  it('refuses a mutation without the CSRF token (403, nothing created) and runs it with the token', async () => {
    const { accountId, cookie, csrf } = await signIn();
    const mutation = 'mutation { createApiKey(name: "from the page") { key apiKey { id name } } }';
    const attempts: Record<string, string>[] = [
      { cookie },
      { cookie, 'x-csrf-token': 'wrong' },
      { cookie, 'x-csrf-token': csrf.slice(0, -1) + (csrf.endsWith('A') ? 'B' : 'A') },
    ];
    for (const headers of attempts) {
      const refused = await gqlWith(mutation, headers);
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toEqual({ errors: [{ message: CSRF_REFUSAL.message, extensions: { code: 'FORBIDDEN' } }] });
    }
    expect(await h.services.apiKeys.list(OPERATOR, accountId)).toHaveLength(0);

    const made = await gqlWith(mutation, { cookie, 'x-csrf-token': csrf });
    expect(made.statusCode).toBe(200);
    expect(made.json<GqlBody>().errors).toBeUndefined();
    expect(made.json<GqlBody<{ createApiKey: { apiKey: { name: string } } }>>().data.createApiKey.apiKey.name).toBe('from the page');
    expect(await h.services.apiKeys.list(OPERATOR, accountId)).toHaveLength(1);
  });

  it('guards the REST door the same way; a session without membership parses on the free tier only', async () => {
    const { accountId, cookie, csrf } = await signIn({ credits: 3 });
    const parse = (body: unknown, headers: Record<string, string>) =>
      h.request('POST', '/api/parse', { headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

    const refused = await parse({ url: `${site.origin}/v` }, { cookie });
    expect(refused.statusCode).toBe(403);
    expect(refused.json<ErrorBody>().error).toMatchObject(CSRF_REFUSAL);
    expect(await h.balance(accountId)).toEqual({ available: 3, held: 0 });
    expect((await h.sql(`select count(*)::int as n from job where account_id = ?`, [accountId]))[0].n).toBe(0);

    const free = await parse({ url: `${site.origin}/v` }, { cookie, 'x-csrf-token': csrf });
    expect(free.statusCode).toBe(200);
    expect(free.json()).toMatchObject({
      quality: '720',
      media: { url: 'https://cdn.example/v-720.mp4' },
      credits: { charged: 1, balance: 2 },
    });
    const hd = await parse({ url: `${site.origin}/v`, quality: '1080' }, { cookie, 'x-csrf-token': csrf });
    expect(hd.statusCode).toBe(403);
    expect(hd.json<ErrorBody>().error.code).toBe('MEMBERSHIP_REQUIRED');
    const transcribe = await h.request('POST', '/api/transcribe', {
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf },
      body: JSON.stringify({ mediaUrl: `${site.origin}/a.mp3` }),
    });
    expect(transcribe.statusCode).toBe(403);
    expect(transcribe.json<ErrorBody>().error.code).toBe('MEMBERSHIP_REQUIRED');
  });

  it('leaves Bearer callers alone; with both, the Authorization header wins', async () => {
    const { key, accountId: keyAccount } = await h.account({ credits: 2 });
    const { accountId: sessionAccount, cookie } = await signIn();
    const withKey = await gqlWith('{ me { id } }', { authorization: `Bearer ${key}` });
    expect(withKey.json<GqlBody<{ me: { id: string } }>>().data.me.id).toBe(keyAccount);
    // A key with a stray cookie and no CSRF token is still the key's request.
    const both = await gqlWith('mutation { createApiKey(name: "k") { apiKey { id } } }', { authorization: `Bearer ${key}`, cookie });
    expect(both.statusCode).toBe(200);
    expect(both.json<GqlBody>().errors).toBeUndefined();
    expect(await h.services.apiKeys.list(OPERATOR, keyAccount)).toHaveLength(2);
    expect(await h.services.apiKeys.list(OPERATOR, sessionAccount)).toHaveLength(0);
    // A bad key is not rescued by a good cookie.
    const badKey = await h.request('GET', `/graphql?query=${encodeURIComponent('{ me { id } }')}`, {
      headers: { authorization: 'Bearer nope', cookie },
    });
    expect(badKey.json<GqlRefusal>().errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });

  it('spends a link once: reuse, unknown and malformed tokens are the same 401', async () => {
    const { link } = await signIn();
    const token = tokenOf(link.url);
    const bodies: unknown[] = [];
    for (const t of [token, 'A'.repeat(43), 'not a token']) {
      const res = await exchange(t);
      expect(res.statusCode).toBe(401);
      expect(res.headers['set-cookie']).toBeUndefined();
      const { requestId: _id, ...error } = res.json<ErrorBody>().error;
      bodies.push(error);
    }
    expect(bodies[0]).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(new Set(bodies.map((b) => JSON.stringify(b))).size).toBe(1);
    for (const body of ['{}', '{"token": 42}', '[]']) {
      const missing = await h.request('POST', '/account/api/session', { headers: { 'content-type': 'application/json' }, body });
      expect(missing.statusCode).toBe(400);
      expect(missing.json<ErrorBody>().error.code).toBe('INVALID_INPUT');
    }
  });

  it('lets only one of several simultaneous exchanges of a link succeed', async () => {
    const account = await h.services.accounts.create(OPERATOR, { name: 'Twice' });
    const token = tokenOf((await h.services.sessions.createLoginLink(OPERATOR, account.id)).url);
    const results = await Promise.all([exchange(token), exchange(token), exchange(token)]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 401, 401]);
    expect((await h.sql(`select count(*)::int as n from account_session where account_id = ?`, [account.id]))[0].n).toBe(1);
  });

  it('takes the cookie on the subscription socket only with the CSRF token in the connection parameters', async () => {
    const { cookie, csrf } = await signIn();
    // A browser sends the cookie with the upgrade request on its own.
    class BrowserSocket extends WebSocket {
      constructor(url: string, protocols?: string | string[]) {
        super(url, protocols, { headers: { cookie } });
      }
    }
    const codes = async (connectionParams: Record<string, string>) => {
      const client = createClient({
        url: `${h.url.replace('http', 'ws')}/graphql`,
        webSocketImpl: BrowserSocket,
        connectionParams,
        retryAttempts: 0,
      });
      try {
        return await new Promise<unknown>((resolve) => {
          client.subscribe(
            { query: `subscription { jobUpdated(id: "00000000-0000-0000-0000-000000000000") { status } }` },
            {
              next: (msg) => resolve(msg.errors?.map((e) => e.extensions?.code)),
              // An error list, or the socket's close event when connection_init was refused.
              error: (e) =>
                resolve(
                  Array.isArray(e)
                    ? e.map((x) => x.extensions?.code)
                    : { closed: (e as CloseEvent).code, reason: (e as CloseEvent).reason },
                ),
              complete: () => resolve('completed'),
            },
          );
        });
      } finally {
        await client.dispose();
      }
    };
    // Refused at connect time (4403: the cookie is valid, the token missing or wrong), before any operation.
    expect(await codes({})).toEqual({ closed: 4403, reason: 'Forbidden: Missing or wrong CSRF token.' });
    expect(await codes({ 'x-csrf-token': 'not-the-token' })).toEqual({ closed: 4403, reason: 'Forbidden: Missing or wrong CSRF token.' });
    expect(await codes({ 'x-csrf-token': csrf })).toEqual(['NOT_FOUND']);
  });

  it('refuses an expired link', async () => {
    const account = await h.services.accounts.create(OPERATOR, { name: 'Late' });
    const link = await h.services.sessions.createLoginLink(OPERATOR, account.id);
    await h.sql(
      `update login_link set created_at = now() - interval '20 minutes', expires_at = now() - interval '1 second' where account_id = ?`,
      [account.id],
    );
    const res = await exchange(tokenOf(link.url));
    expect(res.statusCode).toBe(401);
    expect(res.json<ErrorBody>().error.code).toBe('UNAUTHENTICATED');
  });

  it('logs out on the server: the cookie replayed afterwards is 401 everywhere', async () => {
    const { cookie, csrf } = await signIn();
    const refused = await h.request('POST', '/account/api/logout', { headers: { cookie } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json<ErrorBody>().error).toMatchObject(CSRF_REFUSAL);

    const out = await h.request('POST', '/account/api/logout', { headers: { cookie, 'x-csrf-token': csrf } });
    expect(out.statusCode).toBe(204);
    const cleared = parseSetCookie(out.headers['set-cookie']);
    expect(cleared).toMatchObject({ name: '__Host-mg_session', value: '', attributes: { path: '/', secure: true } });
    expect(out.headers['set-cookie']).toMatch(/Expires=Thu, 01 Jan 1970|Max-Age=0/);

    // Not signed in any more: 204 (no error for the page to log), and the dead cookie is cleared.
    const session = await h.request('GET', '/account/api/session', { headers: { cookie } });
    expect([session.statusCode, session.body]).toEqual([204, '']);
    expect(session.headers['set-cookie']).toMatch(/^__Host-mg_session=;.*(Expires=Thu, 01 Jan 1970|Max-Age=0)/);
    const none = await h.request('GET', '/account/api/session');
    expect([none.statusCode, none.body, none.headers['set-cookie']]).toEqual([204, '', undefined]);
    const me = await h.request('GET', `/graphql?query=${encodeURIComponent('{ me { id } }')}`, { headers: { cookie } });
    expect(me.json<GqlRefusal>().errors[0].extensions.code).toBe('UNAUTHENTICATED');
    // A POST with a dead cookie is refused as a whole, with or without the CSRF token.
    for (const headers of [{ cookie, 'x-csrf-token': csrf }, { cookie }] as Record<string, string>[]) {
      const post = await gqlWith('{ me { id } }', headers);
      expect(post.statusCode).toBe(401);
      expect(post.json<GqlRefusal>().errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
    const rest = await h.request('POST', '/api/parse', {
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf },
      body: JSON.stringify({ url: `${site.origin}/v` }),
    });
    expect(rest.statusCode).toBe(401);
    // Logging out again is harmless.
    expect((await h.request('POST', '/account/api/logout', { headers: { cookie } })).statusCode).toBe(204);
  });

  it('stores only hashes of link tokens and session ids', async () => {
    const { accountId, link, cookie } = await signIn();
    const sessionId = cookie.split('=')[1];
    const dump = JSON.stringify([
      await h.sql(`select *, encode(token_hash, 'hex') as hex from login_link where account_id = ?`, [accountId]),
      await h.sql(`select *, encode(session_hash, 'hex') as hex from account_session where account_id = ?`, [accountId]),
    ]);
    expect(dump).toContain(accountId);
    expect(dump).not.toContain(tokenOf(link.url));
    expect(dump).not.toContain(sessionId);
    expect(dump).not.toContain(Buffer.from(tokenOf(link.url)).toString('hex'));
    expect(dump).not.toContain(Buffer.from(sessionId).toString('hex'));
    const [row] = await h.sql<{ n: number }>(`select octet_length(token_hash) as n from login_link where account_id = ?`, [accountId]);
    expect(Number(row.n)).toBe(32);
  });

  it('ignores a planted mg_session cookie: only __Host-mg_session carries a session', async () => {
    const { accountId, cookie, csrf } = await signIn();
    // What a sibling subdomain or a plain-http hop could set: the same live id under the old name.
    const planted = `mg_session=${cookie.split('=')[1]}`;
    // Signed out, as far as the page's session read goes (204, not an error the console would show).
    const session = await h.request('GET', '/account/api/session', { headers: { cookie: planted } });
    expect([session.statusCode, session.body]).toEqual([204, '']);
    const me = await h.request('GET', `/graphql?query=${encodeURIComponent('{ me { id } }')}`, { headers: { cookie: planted } });
    expect(me.json<GqlRefusal>().errors[0].extensions.code).toBe('UNAUTHENTICATED');
    const made = await gqlWith('mutation { createApiKey(name: "planted") { key } }', { cookie: planted, 'x-csrf-token': csrf });
    expect(made.json<GqlRefusal>().errors[0].extensions.code).toBe('UNAUTHENTICATED');
    const parse = await h.request('POST', '/api/parse', {
      headers: { 'content-type': 'application/json', cookie: planted, 'x-csrf-token': csrf },
      body: JSON.stringify({ url: `${site.origin}/v` }),
    });
    expect(parse.statusCode).toBe(401);
    expect(await h.services.apiKeys.list(OPERATOR, accountId)).toHaveLength(0);
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
  });

  it('ends the browser’s session at a new sign-in, only with its CSRF token: the old session id is 401 afterwards', async () => {
    const ada = await signIn();
    const bea = await h.services.accounts.create(OPERATOR, { name: 'Bea' });
    const link = await h.services.sessions.createLoginLink(OPERATOR, bea.id);
    const token = tokenOf(link.url);
    const liveSessions = async (accountId: string) =>
      (
        await h.sql<{ n: number }>(`select count(*)::int as n from account_session where account_id = ? and revoked_at is null`, [
          accountId,
        ])
      )[0].n;

    // Without the current session's CSRF token (another site cannot read it): refused, nothing spent or ended.
    for (const headers of [{ cookie: ada.cookie }, { cookie: ada.cookie, 'x-csrf-token': 'A'.repeat(43) }] as Record<string, string>[]) {
      const refused = await exchange(token, headers);
      expect(refused.statusCode).toBe(403);
      expect(refused.json<ErrorBody>().error).toMatchObject(CSRF_REFUSAL);
      expect(refused.headers['set-cookie']).toBeUndefined();
    }
    expect((await h.request('GET', '/account/api/session', { headers: { cookie: ada.cookie } })).statusCode).toBe(200);
    expect((await h.sql<{ used_at: unknown }>(`select used_at from login_link where account_id = ?`, [bea.id]))[0].used_at).toBeNull();
    expect(await liveSessions(bea.id)).toBe(0);

    // With it: Bea is signed in and Ada's session is over on the server.
    const switched = await exchange(token, { cookie: ada.cookie, 'x-csrf-token': ada.csrf });
    expect(switched.statusCode).toBe(200);
    expect(switched.json<SessionBody>().account).toEqual({ id: bea.id, name: 'Bea' });
    const beaCookie = cookiePart(switched);
    // Ada's old cookie reads as signed out (204) and authenticates nothing (401).
    expect((await h.request('GET', '/account/api/session', { headers: { cookie: ada.cookie } })).statusCode).toBe(204);
    expect((await gqlWith('{ me { id } }', { cookie: ada.cookie, 'x-csrf-token': ada.csrf })).statusCode).toBe(401);
    expect(await liveSessions(ada.accountId)).toBe(0);
    expect((await h.request('GET', '/account/api/session', { headers: { cookie: beaCookie } })).json<SessionBody>().account.name).toBe(
      'Bea',
    );

    // A link that cannot be used ends nothing, even with the CSRF token.
    const beaCsrf = switched.json<SessionBody>().csrfToken;
    const spent = await exchange(token, { cookie: beaCookie, 'x-csrf-token': beaCsrf });
    expect(spent.statusCode).toBe(401);
    expect((await h.request('GET', '/account/api/session', { headers: { cookie: beaCookie } })).statusCode).toBe(200);

    // The cookie of an ended session is no session: a sign-in with it needs no token.
    const again = await exchange(tokenOf((await h.services.sessions.createLoginLink(OPERATOR, ada.accountId)).url), { cookie: ada.cookie });
    expect(again.statusCode).toBe(200);
    expect(await liveSessions(ada.accountId)).toBe(1);
  });

  it('tells which account a link would sign in, and the browser’s own session, without spending the link', async () => {
    const bea = await h.services.accounts.create(OPERATOR, { name: 'Bea' });
    const link = await h.services.sessions.createLoginLink(OPERATOR, bea.id);
    const peek = (body: string, headers: Record<string, string> = {}) =>
      h.request('POST', '/account/api/login-link', { headers: { 'content-type': 'application/json', ...headers }, body });
    const seen = await peek(JSON.stringify({ token: tokenOf(link.url) }));
    expect(seen.statusCode).toBe(200);
    expect(seen.json()).toEqual({ account: { id: bea.id, name: 'Bea' }, expiresAt: link.expiresAt.toISOString(), session: null });
    expect(seen.headers['set-cookie']).toBeUndefined();
    expect(seen.headers['cache-control']).toBe('no-store');
    // Signed in as Ada: her session, as GET /account/api/session shows it (the page asks before switching).
    const ada = await signIn();
    const asAda = await peek(JSON.stringify({ token: tokenOf(link.url) }), { cookie: ada.cookie });
    expect(asAda.json()).toEqual({
      ...seen.json<object>(),
      session: (await h.request('GET', '/account/api/session', { headers: { cookie: ada.cookie } })).json(),
    });
    expect(asAda.json<{ session: SessionBody }>().session.account.name).toBe('Ada');
    expect((await exchange(tokenOf(link.url))).statusCode).toBe(200);
    // Spent, unknown and malformed: the exchange's 401; no token: 400.
    const spent = await exchange(tokenOf(link.url));
    for (const token of [tokenOf(link.url), 'A'.repeat(43), 'not a token']) {
      const refused = await peek(JSON.stringify({ token }));
      expect(refused.statusCode).toBe(401);
      expect(refused.json<ErrorBody>().error.message).toBe(spent.json<ErrorBody>().error.message);
    }
    const missing = await peek('{}');
    expect(missing.statusCode).toBe(400);
    expect(missing.json<ErrorBody>().error).toMatchObject({ code: 'INVALID_INPUT', details: { token: 'required string' } });
  });

  it('tells the page which sign-ins there are', async () => {
    const res = await h.request('GET', '/account/config.json');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ oidc: null, loginLinks: true });
  });
});

describe('account area sessions: settings', () => {
  it('lasts SESSION_HOURS, links last LOGIN_LINK_MINUTES, links point at PUBLIC_URL, an https PUBLIC_URL makes the cookie Secure', async () => {
    const h = await createHarness({ LOGIN_LINK_MINUTES: '0.01', SESSION_HOURS: '0.0003', PUBLIC_URL: 'https://gate.example.com/base/' });
    try {
      const account = await h.services.accounts.create(OPERATOR, { name: 'Brief' });
      const link = await h.services.sessions.createLoginLink(OPERATOR, account.id);
      expect(link.url).toMatch(/^https:\/\/gate\.example\.com\/base\/account\/#login=/);
      const res = await h.request('POST', '/account/api/session', {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: tokenOf(link.url) }),
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers['set-cookie']).toMatch(/; Secure/);
      expect(res.headers['set-cookie']).toMatch(/; Max-Age=1(;|$)/);
      const cookie = cookiePart(res);
      expect((await h.request('GET', '/account/api/session', { headers: { cookie } })).statusCode).toBe(200);

      const late = await h.services.sessions.createLoginLink(OPERATOR, account.id);
      // What the rows promise: the session lasts 1.08 s, each link 0.6 s.
      const lasts = async (table: string) =>
        (
          await h.sql<{ ms: string }>(
            `select extract(epoch from expires_at - created_at) * 1000 as ms from ${table} where account_id = ? order by created_at`,
            [account.id],
          )
        ).map((r) => Number(r.ms));
      expect(await lasts('account_session')).toEqual([1080]);
      expect(await lasts('login_link')).toEqual([600, 600]);
      // 1.3 s pass for this account's rows (the database's now() decides expiry), not for the test.
      for (const table of ['account_session', 'login_link']) {
        await h.sql(
          `update ${table} set created_at = created_at - interval '1.3 seconds', expires_at = expires_at - interval '1.3 seconds' where account_id = ?`,
          [account.id],
        );
      }
      // The session ran out (1.08 s), and so did the link (0.6 s).
      expect((await h.request('GET', '/account/api/session', { headers: { cookie } })).statusCode).toBe(204);
      const spent = await h.request('POST', '/account/api/session', {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: tokenOf(late.url) }),
      });
      expect(spent.statusCode).toBe(401);
    } finally {
      await h.close();
    }
  });

  /** A harness whose warnings are kept, signed in once: its Set-Cookie and the warnings said at start. */
  const signedInWith = async (env: Record<string, string>) => {
    const lines: string[] = [];
    const h = await createHarness(env, pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) }));
    try {
      const account = await h.services.accounts.create(OPERATOR, { name: 'Plain' });
      const link = await h.services.sessions.createLoginLink(OPERATOR, account.id);
      const res = await h.request('POST', '/account/api/session', {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: tokenOf(link.url) }),
      });
      expect(res.statusCode).toBe(200);
      const cookie = parseSetCookie(res.headers['set-cookie']);
      const status = async (name: string) =>
        (await h.request('GET', '/account/api/session', { headers: { cookie: `${name}=${cookie.value}` } })).statusCode;
      return {
        cookie,
        warnings: lines.map((l) => JSON.parse(l)).filter((l) => l.level === 40),
        asHost: await status('__Host-mg_session'),
        asPlain: await status('mg_session'),
      };
    } finally {
      await h.close();
    }
  };

  it('outside production, a plain-http PUBLIC_URL on another host than this machine falls back to mg_session without Secure, and says so at start', async () => {
    const { cookie, warnings, asHost, asPlain } = await signedInWith({ PUBLIC_URL: 'http://gate.lan:4000' });
    expect(cookie).toMatchObject({ name: 'mg_session', attributes: { path: '/', httponly: true, samesite: 'Strict' } });
    expect(cookie.attributes.secure).toBeUndefined();
    expect({ asPlain, asHost }).toEqual({ asPlain: 200, asHost: 204 });
    expect(warnings).toEqual([
      expect.objectContaining({
        cookie: 'mg_session',
        msg: expect.stringMatching(/^PUBLIC_URL is plain http on gate\.lan: outside production/),
      }),
    ]);
  });

  it('in production the cookie is __Host-mg_session and Secure whatever PUBLIC_URL says, with a warning for plain http', async () => {
    const production = await signedInWith({ NODE_ENV: 'production', PUBLIC_URL: 'http://gate.lan:4000' });
    expect(production.cookie).toMatchObject({ name: '__Host-mg_session', attributes: { path: '/', secure: true, httponly: true } });
    expect({ asPlain: production.asPlain, asHost: production.asHost }).toEqual({ asPlain: 204, asHost: 200 });
    expect(production.warnings).toEqual([
      expect.objectContaining({
        msg: expect.stringMatching(/browsers keep the session cookie \(__Host-mg_session, Secure\) only over https/),
      }),
    ]);
  });

  it.each(['http://app.localhost:4000', 'https://gate.lan'])(
    'with PUBLIC_URL %s the cookie is __Host-mg_session and Secure, without a warning',
    async (url) => {
      const { cookie, warnings } = await signedInWith({ PUBLIC_URL: url });
      expect({ name: cookie.name, secure: cookie.attributes.secure, warnings }).toEqual({
        name: '__Host-mg_session',
        secure: true,
        warnings: [],
      });
    },
  );

  it('serves the OIDC client to the page only when OIDC_CLIENT_ID is set', async () => {
    const h = await createHarness({ OIDC_ISSUER: 'https://id.example.com', OIDC_AUDIENCE: 'mediagate', OIDC_CLIENT_ID: 'account-page' });
    try {
      expect((await h.request('GET', '/account/config.json')).json()).toEqual({
        oidc: { issuer: 'https://id.example.com', clientId: 'account-page' },
        loginLinks: true,
      });
    } finally {
      await h.close();
    }
  });
});

describe('mediagate account login-link', () => {
  const run = promisify(execFile);
  const NODE = join(process.cwd(), 'node_modules/.bin/node');
  const CLI = join(process.cwd(), 'dist/cli/main.js');
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let dataDir: string;
  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'mediagate-login-link-'));
  });
  afterAll(async () => {
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const env = () => ({
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    API_KEY_PEPPER: 'cli-test-pepper-0123456789abcdef0123',
    MEDIAGATE_DATA_DIR: dataDir,
    PUBLIC_URL: 'https://gate.example.com',
    LOGIN_LINK_MINUTES: '15',
    DATABASE_URL: db.clientUrl,
  });
  const cli = async (...args: string[]) => (await run(NODE, [CLI, ...args], { env: env() })).stdout.trim();

  it('prints {"url", "expiresAt"} with --json, and the link and its expiry as text', async () => {
    const account = JSON.parse(await cli('--json', 'account', 'create', '--name', 'Ada'));
    const before = Date.now();
    const out = JSON.parse(await cli('account', 'login-link', account.id, '--json'));
    expect(Object.keys(out).sort()).toEqual(['expiresAt', 'url']);
    expect(out.url).toMatch(/^https:\/\/gate\.example\.com\/account\/#login=[A-Za-z0-9_-]{43}$/);
    const expires = new Date(out.expiresAt).getTime();
    expect(expires).toBeGreaterThan(before + 14 * 60_000);
    expect(expires).toBeLessThan(before + 16 * 60_000 + 5_000);

    const text = await cli('account', 'login-link', account.id);
    expect(text).toMatch(/https:\/\/gate\.example\.com\/account\/#login=[A-Za-z0-9_-]{43}/);
    expect(text).toMatch(/expiresAt: \d{4}-\d\d-\d\dT/);

    await expect(
      run(NODE, [CLI, '--json', 'account', 'login-link', '00000000-0000-0000-0000-000000000000'], { env: env() }),
    ).rejects.toMatchObject({
      code: 1,
      stdout: expect.stringContaining('"NOT_FOUND"'),
    });

    // The link made through the CLI signs in once, and only its hash is stored.
    const orm = await openOrm(db.clientUrl, 1);
    const rows = await orm.em.getConnection().execute(`select * from login_link`);
    await orm.close(true);
    expect(rows).toHaveLength(2);
    expect(JSON.stringify(rows)).not.toContain(tokenOf(out.url));
  }, 60_000); // four CLI processes, a second of CPU apiece on two busy cores
});
