import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createHarness, type Harness, type TestResponse } from '../support/harness.js';
import { createTestDatabase } from '../support/test-database.js';
import { initOrm } from '../../src/db/database.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';

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
    site.page('/v', `<html><head>
      <meta property="og:video" content="https://cdn.example/v-1080.mp4"><meta property="og:video:type" content="video/mp4"><meta property="og:video:height" content="1080">
      <meta property="og:video" content="https://cdn.example/v-720.mp4"><meta property="og:video:type" content="video/mp4"><meta property="og:video:height" content="720">
    </head></html>`);
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort });
  });
  afterAll(async () => {
    await h.close();
    await site.close();
  });

  const exchange = (token: unknown, headers: Record<string, string> = {}) =>
    h.request('POST', '/account/api/session', { headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ token }) });

  const signIn = async (opts: { member?: boolean; credits?: number } = {}) => {
    const account = await h.services.accounts.create({ name: 'Ada', credits: opts.credits ?? 5, membershipDays: opts.member ? 30 : undefined });
    const link = await h.services.sessions.createLoginLink(account.id);
    const res = await exchange(tokenOf(link.url));
    expect(res.statusCode).toBe(200);
    return { accountId: account.id, link, res, cookie: cookiePart(res), csrf: res.json().csrfToken as string };
  };

  const gqlWith = (query: string, headers: Record<string, string>) =>
    h.request('POST', '/graphql', { headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query }) });

  it('makes a link to /account with the token in the fragment, and exchanges it for an HttpOnly, SameSite=Strict cookie', async () => {
    const before = Date.now();
    const { accountId, link, res, cookie, csrf } = await signIn();
    expect(link.url).toMatch(/^http:\/\/localhost:4000\/account\/#login=[A-Za-z0-9_-]{43}$/);
    expect(link.expiresAt.getTime()).toBeGreaterThan(before + 9 * 60_000);
    expect(link.expiresAt.getTime()).toBeLessThan(before + 11 * 60_000);

    const body = res.json();
    expect(body).toEqual({ csrfToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expiresAt: expect.any(String), account: { id: accountId, name: 'Ada' } });
    expect(Math.abs(new Date(body.expiresAt).getTime() - (Date.now() + 8 * 3600_000))).toBeLessThan(60_000);
    expect(res.headers['cache-control']).toBe('no-store');

    const setCookie = res.headers['set-cookie'];
    expect(cookie).toMatch(/^mg_session=[A-Za-z0-9_-]{43}$/);
    expect(setCookie).toMatch(/; HttpOnly/i);
    expect(setCookie).toMatch(/; SameSite=Strict/i);
    expect(setCookie).toMatch(/; Path=\/(;|$)/);
    expect(setCookie).toMatch(/; Max-Age=28800(;|$)/);
    expect(setCookie).not.toMatch(/secure/i);
    expect(setCookie).not.toContain(csrf);

    // The page recovers its CSRF token after a reload.
    const again = await h.request('GET', '/account/api/session', { headers: { cookie } });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ csrfToken: csrf, expiresAt: body.expiresAt, account: { id: accountId, name: 'Ada' } });
  });

  it('answers GraphQL with the cookie: a query over GET as is, anything over POST only with the CSRF token', async () => {
    const { accountId, cookie, csrf } = await signIn();
    const get = await h.request('GET', `/graphql?query=${encodeURIComponent('{ me { id name } }')}`, { headers: { cookie } });
    expect(get.statusCode).toBe(200);
    expect(get.json().data.me).toEqual({ id: accountId, name: 'Ada' });

    const post = await gqlWith('{ me { id name } }', { cookie, 'x-csrf-token': csrf });
    expect(post.statusCode).toBe(200);
    expect(post.json()).toEqual({ data: { me: { id: accountId, name: 'Ada' } } });

    const noCsrf = await gqlWith('{ me { id name } }', { cookie });
    expect(noCsrf.statusCode).toBe(403);
    expect(noCsrf.json().errors[0]).toMatchObject({ message: CSRF_REFUSAL.message, extensions: { code: 'FORBIDDEN' } });
  });

  it('refuses a mutation without the CSRF token (403, nothing created) and runs it with the token', async () => {
    const { accountId, cookie, csrf } = await signIn();
    const mutation = 'mutation { createApiKey(name: "from the page") { key apiKey { id name } } }';
    const attempts: Record<string, string>[] = [{ cookie }, { cookie, 'x-csrf-token': 'wrong' }, { cookie, 'x-csrf-token': csrf.slice(0, -1) + (csrf.endsWith('A') ? 'B' : 'A') }];
    for (const headers of attempts) {
      const refused = await gqlWith(mutation, headers);
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toEqual({ errors: [{ message: CSRF_REFUSAL.message, extensions: { code: 'FORBIDDEN' } }] });
    }
    expect(await h.services.apiKeys.list(accountId)).toHaveLength(0);

    const made = await gqlWith(mutation, { cookie, 'x-csrf-token': csrf });
    expect(made.statusCode).toBe(200);
    expect(made.json().errors).toBeUndefined();
    expect(made.json().data.createApiKey.apiKey.name).toBe('from the page');
    expect(await h.services.apiKeys.list(accountId)).toHaveLength(1);
  });

  it('guards the REST door the same way; a session without membership parses on the free tier only', async () => {
    const { accountId, cookie, csrf } = await signIn({ credits: 3 });
    const parse = (body: unknown, headers: Record<string, string>) =>
      h.request('POST', '/api/parse', { headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

    const refused = await parse({ url: `${site.origin}/v` }, { cookie });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toMatchObject(CSRF_REFUSAL);
    expect(await h.balance(accountId)).toEqual({ available: 3, held: 0 });
    expect((await h.sql(`select count(*)::int as n from job where account_id = ?`, [accountId]))[0].n).toBe(0);

    const free = await parse({ url: `${site.origin}/v` }, { cookie, 'x-csrf-token': csrf });
    expect(free.statusCode).toBe(200);
    expect(free.json()).toMatchObject({ quality: '720', media: { url: 'https://cdn.example/v-720.mp4' }, credits: { charged: 1, balance: 2 } });
    const hd = await parse({ url: `${site.origin}/v`, quality: '1080' }, { cookie, 'x-csrf-token': csrf });
    expect(hd.statusCode).toBe(403);
    expect(hd.json().error.code).toBe('MEMBERSHIP_REQUIRED');
    const transcribe = await h.request('POST', '/api/transcribe', {
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf },
      body: JSON.stringify({ mediaUrl: `${site.origin}/a.mp3` }),
    });
    expect(transcribe.statusCode).toBe(403);
    expect(transcribe.json().error.code).toBe('MEMBERSHIP_REQUIRED');
  });

  it('leaves Bearer callers alone; with both, the Authorization header wins', async () => {
    const { key, accountId: keyAccount } = await h.account({ credits: 2 });
    const { accountId: sessionAccount, cookie } = await signIn();
    const withKey = await gqlWith('{ me { id } }', { authorization: `Bearer ${key}` });
    expect(withKey.json().data.me.id).toBe(keyAccount);
    // A key with a stray cookie and no CSRF token is still the key's request.
    const both = await gqlWith('mutation { createApiKey(name: "k") { apiKey { id } } }', { authorization: `Bearer ${key}`, cookie });
    expect(both.statusCode).toBe(200);
    expect(both.json().errors).toBeUndefined();
    expect(await h.services.apiKeys.list(keyAccount)).toHaveLength(2);
    expect(await h.services.apiKeys.list(sessionAccount)).toHaveLength(0);
    // A bad key is not rescued by a good cookie.
    const badKey = await h.request('GET', `/graphql?query=${encodeURIComponent('{ me { id } }')}`, {
      headers: { authorization: 'Bearer nope', cookie },
    });
    expect(badKey.json().errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });

  it('spends a link once: reuse, unknown and malformed tokens are the same 401', async () => {
    const { link } = await signIn();
    const token = tokenOf(link.url);
    const bodies: unknown[] = [];
    for (const t of [token, 'A'.repeat(43), 'not a token']) {
      const res = await exchange(t);
      expect(res.statusCode).toBe(401);
      expect(res.headers['set-cookie']).toBeUndefined();
      const { requestId: _id, ...error } = res.json().error;
      bodies.push(error);
    }
    expect(bodies[0]).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(new Set(bodies.map((b) => JSON.stringify(b))).size).toBe(1);
    for (const body of ['{}', '{"token": 42}', '[]']) {
      const missing = await h.request('POST', '/account/api/session', { headers: { 'content-type': 'application/json' }, body });
      expect(missing.statusCode).toBe(400);
      expect(missing.json().error.code).toBe('INVALID_INPUT');
    }
  });

  it('lets only one of several simultaneous exchanges of a link succeed', async () => {
    const account = await h.services.accounts.create({ name: 'Twice' });
    const token = tokenOf((await h.services.sessions.createLoginLink(account.id)).url);
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
      const client = createClient({ url: h.url.replace('http', 'ws') + '/graphql', webSocketImpl: BrowserSocket, connectionParams, retryAttempts: 0 });
      try {
        return await new Promise<unknown>((resolve) => {
          client.subscribe(
            { query: `subscription { jobUpdated(id: "00000000-0000-0000-0000-000000000000") { status } }` },
            { next: (msg) => resolve(msg.errors?.map((e) => e.extensions?.code)), error: (e) => resolve((e as any[]).map?.((x) => x.extensions?.code) ?? e), complete: () => resolve('completed') },
          );
        });
      } finally {
        await client.dispose();
      }
    };
    expect(await codes({})).toEqual(['FORBIDDEN']);
    expect(await codes({ 'x-csrf-token': csrf })).toEqual(['NOT_FOUND']);
  });

  it('refuses an expired link', async () => {
    const account = await h.services.accounts.create({ name: 'Late' });
    const link = await h.services.sessions.createLoginLink(account.id);
    await h.sql(`update login_link set created_at = now() - interval '20 minutes', expires_at = now() - interval '1 second' where account_id = ?`, [account.id]);
    const res = await exchange(tokenOf(link.url));
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('UNAUTHENTICATED');
  });

  it('logs out on the server: the cookie replayed afterwards is 401 everywhere', async () => {
    const { cookie, csrf } = await signIn();
    const refused = await h.request('POST', '/account/api/logout', { headers: { cookie } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toMatchObject(CSRF_REFUSAL);

    const out = await h.request('POST', '/account/api/logout', { headers: { cookie, 'x-csrf-token': csrf } });
    expect(out.statusCode).toBe(204);
    expect(out.headers['set-cookie']).toMatch(/^mg_session=;/);
    expect(out.headers['set-cookie']).toMatch(/Expires=Thu, 01 Jan 1970|Max-Age=0/);

    // Not signed in any more: 204 (no error for the page to log), and the dead cookie is cleared.
    const session = await h.request('GET', '/account/api/session', { headers: { cookie } });
    expect([session.statusCode, session.body]).toEqual([204, '']);
    expect(session.headers['set-cookie']).toMatch(/^mg_session=;.*(Expires=Thu, 01 Jan 1970|Max-Age=0)/);
    const none = await h.request('GET', '/account/api/session');
    expect([none.statusCode, none.body, none.headers['set-cookie']]).toEqual([204, '', undefined]);
    const me = await h.request('GET', `/graphql?query=${encodeURIComponent('{ me { id } }')}`, { headers: { cookie } });
    expect(me.json().errors[0].extensions.code).toBe('UNAUTHENTICATED');
    // A POST with a dead cookie is refused as a whole, with or without the CSRF token.
    for (const headers of [{ cookie, 'x-csrf-token': csrf }, { cookie }] as Record<string, string>[]) {
      const post = await gqlWith('{ me { id } }', headers);
      expect(post.statusCode).toBe(401);
      expect(post.json().errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
    const rest = await h.request('POST', '/api/parse', { headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf }, body: JSON.stringify({ url: `${site.origin}/v` }) });
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

  it('ignores X-Forwarded-Proto when the proxy is not trusted (no Secure over plain http)', async () => {
    const account = await h.services.accounts.create({ name: 'Proxy' });
    const link = await h.services.sessions.createLoginLink(account.id);
    const res = await exchange(tokenOf(link.url), { 'x-forwarded-proto': 'https' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['set-cookie']).not.toMatch(/secure/i);
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
      const account = await h.services.accounts.create({ name: 'Brief' });
      const link = await h.services.sessions.createLoginLink(account.id);
      expect(link.url).toMatch(/^https:\/\/gate\.example\.com\/base\/account\/#login=/);
      const res = await h.request('POST', '/account/api/session', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: tokenOf(link.url) }) });
      expect(res.statusCode).toBe(200);
      expect(res.headers['set-cookie']).toMatch(/; Secure/);
      expect(res.headers['set-cookie']).toMatch(/; Max-Age=1(;|$)/);
      const cookie = cookiePart(res);
      expect((await h.request('GET', '/account/api/session', { headers: { cookie } })).statusCode).toBe(200);

      const late = await h.services.sessions.createLoginLink(account.id);
      await new Promise((r) => setTimeout(r, 1300));
      // The session ran out (1.08 s), and so did the link (0.6 s).
      expect((await h.request('GET', '/account/api/session', { headers: { cookie } })).statusCode).toBe(204);
      const spent = await h.request('POST', '/account/api/session', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: tokenOf(late.url) }) });
      expect(spent.statusCode).toBe(401);
    } finally {
      await h.close();
    }
  });

  it('serves the OIDC client to the page only when OIDC_CLIENT_ID is set', async () => {
    const h = await createHarness({ OIDC_ISSUER: 'https://id.example.com', OIDC_AUDIENCE: 'mediagate', OIDC_CLIENT_ID: 'account-page' });
    try {
      expect((await h.request('GET', '/account/config.json')).json()).toEqual({ oidc: { issuer: 'https://id.example.com', clientId: 'account-page' }, loginLinks: true });
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
    ...(db.embedded ? { DATABASE_URL: '' } : { DATABASE_URL: db.clientUrl }),
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

    await expect(run(NODE, [CLI, '--json', 'account', 'login-link', '00000000-0000-0000-0000-000000000000'], { env: env() })).rejects.toMatchObject({
      code: 1,
      stdout: expect.stringContaining('"NOT_FOUND"'),
    });

    if (!db.embedded) {
      // The link made through the CLI signs in once, and only its hash is stored.
      const orm = await initOrm(db.clientUrl, 1);
      const rows = await orm.em.getConnection().execute(`select * from login_link`);
      await orm.close(true);
      expect(rows).toHaveLength(2);
      expect(JSON.stringify(rows)).not.toContain(tokenOf(out.url));
    }
  });
});
