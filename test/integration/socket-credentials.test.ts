import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { startFakeIssuer } from '../fakes/oidc.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, type Harness, TEST_PEPPER, type TestResponse } from '../support/harness.js';
import { TEST_DATABASES } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';
import { follow, JOB_UPDATED, keyClient, testClient, type Followed, type JobPush, type TestClient } from '../support/ws-client.js';
import { OPERATOR } from '../../src/modules/principal.js';

/**
 * A WebSocket lives no longer than the credential it signed in with: a logout, a new sign-in in the
 * same browser, a session's expiry and a key's revocation close it with 4401 (on every instance), and
 * the subscriptions it was running end with it. Met with real graphql-ws clients.
 */

const run = promisify(execFile);
const NODE = join(process.cwd(), 'node_modules/.bin/node');
const CLI = join(process.cwd(), 'dist/cli/main.js');

const tokenOf = (url: string) => /#login=([A-Za-z0-9_-]+)$/.exec(url)![1];
const cookiePart = (res: TestResponse) => res.headers['set-cookie'].split(';')[0];

const until = <T>(what: string, value: () => T | Promise<T>, ms = 10_000) => waitFor(value, { describe: what, timeout: ms, interval: 5 });

/** The account area's sign-in through a login link, as the page does it (ending `replacing`, the browser's session, if given). */
async function signIn(h: Harness, accountId: string, replacing?: Session): Promise<Session> {
  const link = await h.services.sessions.createLoginLink(OPERATOR, accountId);
  const res = await h.request('POST', '/account/api/session', {
    headers: { 'content-type': 'application/json', ...(replacing ? { cookie: replacing.cookie, 'x-csrf-token': replacing.csrf } : {}) },
    body: JSON.stringify({ token: tokenOf(link.url) }),
  });
  expect(res.statusCode).toBe(200);
  return { cookie: cookiePart(res), csrf: res.json<{ csrfToken: string }>().csrfToken };
}
interface Session {
  cookie: string;
  csrf: string;
}

/** A socket signed in with the session's cookie (sent with the upgrade, as a browser does) and its CSRF token. */
const sessionClient = (h: Harness, s: Session) => testClient(h, { 'x-csrf-token': s.csrf }, { cookie: s.cookie });

describe.each(TEST_DATABASES)('sockets follow their credentials (%s database)', (database) => {
  let h: Harness;
  let site: FakeSite;
  let pageMayAnswer!: () => void;
  beforeAll(async () => {
    site = await startFakeSite();
    // A page that answers only at the end: the parses of these tests stay RUNNING, their subscriptions open.
    const answer = new Promise<void>((resolve) => (pageMayAnswer = resolve));
    site.route('/slow', (_req, res) => void answer.then(() => res.writeHead(404).end()));
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort, RATE_LIMIT_IP_PER_MINUTE: '10000' }, undefined, { database });
  });
  afterAll(async () => {
    pageMayAnswer();
    await h?.close();
    await site?.close();
  });

  const clients: TestClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.dispose()));
  });
  const track = (c: TestClient) => (clients.push(c), c);

  /** An account with a key and a running parse (its job id), on the instance `on`. */
  async function accountWithRunningJob(on: Harness = h) {
    const account = await on.account();
    void on.rest('/api/parse', { url: `${site.origin}/slow` }, account.key);
    const jobId = await until(
      'the running parse',
      async () =>
        (
          await on.gql<{ jobs: { edges: { node: { id: string } }[] } }>(
            '{ jobs(first: 1) { edges { node { id status } } } }',
            {},
            account.key,
          )
        ).data.jobs.edges[0]?.node.id,
    );
    return { ...account, jobId };
  }

  /** Follows the job and waits for its first push: the subscription is running. */
  async function running(c: TestClient, jobId: string): Promise<Followed<JobPush>> {
    const sub = follow(c, JOB_UPDATED, { id: jobId });
    await until('the first push', () => sub.pushes.length === 1);
    expect(sub.pushes[0].status).toBe('RUNNING');
    return sub;
  }

  /** Waits for the socket to close, and says after how many ms from `since`. */
  async function closedWith(c: TestClient, sub: Followed<JobPush>, since: number): Promise<{ code: number; ms: number }> {
    await until('the socket to close', () => c.closes.length > 0);
    const ms = performance.now() - since;
    await until('the subscription to end', () => sub.end);
    expect(sub.end).toEqual({ closed: c.closes[0] });
    return { code: c.closes[0], ms };
  }

  it('logout closes the session’s sockets with 4401 and ends their subscriptions; a key’s socket of the same account stays', async () => {
    const { accountId, key, jobId } = await accountWithRunningJob();
    const session = await signIn(h, accountId);
    const browser = track(sessionClient(h, session));
    const tab = track(sessionClient(h, session));
    const server = track(keyClient(h, key));
    const subs = [await running(browser, jobId), await running(tab, jobId)];
    const kept = await running(server, jobId);
    const sent = performance.now();
    const out = await h.request('POST', '/account/api/logout', { headers: { cookie: session.cookie, 'x-csrf-token': session.csrf } });
    expect(out.statusCode).toBe(204);
    const closed = await closedWith(browser, subs[0], sent);
    expect(closed.code).toBe(4401);
    expect((await closedWith(tab, subs[1], sent)).code).toBe(4401);
    process.stdout.write(`[socket-credentials ${database}] logout: socket closed ${closed.ms.toFixed(0)} ms after the request was sent\n`);
    // The key's socket still follows the job.
    await h.sql(`update job set progress = 0.5 where id = ?`, [jobId]);
    await until('the key’s socket to hear the change', () => kept.pushes.at(-1)?.progress === 0.5);
    expect(server.closes).toEqual([]);
    expect(kept.end).toBeNull();
    // And the cookie no longer opens one.
    const again = track(sessionClient(h, session));
    const refused = follow(again, JOB_UPDATED, { id: jobId });
    await until('the refusal', () => refused.end);
    expect(refused.end).toEqual({ closed: 4401 });
  });

  it('a new sign-in in the same browser ends the previous session: its socket is closed 4401, the new session’s is not', async () => {
    const { accountId, jobId } = await accountWithRunningJob();
    const first = await signIn(h, accountId);
    const old = track(sessionClient(h, first));
    const oldSub = await running(old, jobId);
    const sent = performance.now();
    const second = await signIn(h, accountId, first);
    expect((await closedWith(old, oldSub, sent)).code).toBe(4401);
    const fresh = track(sessionClient(h, second));
    const freshSub = await running(fresh, jobId);
    expect(freshSub.end).toBeNull();
  });

  it('a session that expires closes its sockets at its end, with 4401', async () => {
    const { accountId, jobId } = await accountWithRunningJob();
    const session = await signIn(h, accountId);
    // The session ends in two seconds (sessions last hours: its row is aged).
    const [{ expires_at }] = await h.sql<{ expires_at: Date | string }>(
      `update account_session set expires_at = now() + interval '2 seconds'
        where account_id = ? and revoked_at is null returning expires_at`,
      [accountId],
    );
    const c = track(sessionClient(h, session));
    const sub = await running(c, jobId);
    const { code } = await closedWith(c, sub, performance.now());
    expect(code).toBe(4401);
    const late = Date.now() - new Date(expires_at).getTime();
    process.stdout.write(`[socket-credentials ${database}] expiry: socket closed ${late} ms after the session's end\n`);
    expect(late).toBeGreaterThanOrEqual(-50);
    expect(late).toBeLessThan(1500);
  });

  it('revokeApiKey closes the key’s sockets with 4401 at once, with their subscriptions; another key’s socket stays', async () => {
    const { accountId, key, keyId, jobId } = await accountWithRunningJob();
    const other = await h.services.apiKeys.create(OPERATOR, accountId, 'other');
    const revoked = track(keyClient(h, key));
    const stays = track(keyClient(h, other.key));
    const subs = [await running(revoked, jobId), await running(revoked, jobId)];
    const kept = await running(stays, jobId);
    const sent = performance.now();
    const res = await h.gql<{ revokeApiKey: { revokedAt: string } }>(
      `mutation($id: ID!) { revokeApiKey(id: $id) { revokedAt } }`,
      { id: keyId },
      other.key,
    );
    expect(res.data.revokeApiKey.revokedAt).toEqual(expect.any(String));
    const closed = await closedWith(revoked, subs[0], sent);
    expect(closed.code).toBe(4401);
    expect(subs[1].end).toEqual({ closed: 4401 });
    process.stdout.write(
      `[socket-credentials ${database}] revokeApiKey: socket closed ${closed.ms.toFixed(0)} ms after the mutation was sent\n`,
    );
    expect(stays.closes).toEqual([]);
    expect(kept.end).toBeNull();
  });

  it('`mediagate key revoke` (another process) closes the key’s socket with 4401', async () => {
    const { key, keyId, jobId } = await accountWithRunningJob();
    const c = track(keyClient(h, key));
    const sub = await running(c, jobId);
    const sent = performance.now();
    const { stdout } = await run(NODE, [CLI, '--json', 'key', 'revoke', keyId], {
      env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'silent', API_KEY_PEPPER: TEST_PEPPER, DATABASE_URL: h.clientUrl },
    });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toMatchObject({ id: keyId, revokedAt: expect.any(String) });
    const exited = performance.now() - sent;
    const closed = await closedWith(c, sub, sent);
    expect(closed.code).toBe(4401);
    process.stdout.write(
      `[socket-credentials ${database}] key revoke (CLI): the command took ${exited.toFixed(0)} ms; the socket closed ${(closed.ms - exited).toFixed(0)} ms after it exited\n`,
    );
  }, 60_000);

  it('across two instances on one database: a logout and a revocation made on one close the sockets held by the other', async () => {
    const other = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort, RATE_LIMIT_IP_PER_MINUTE: '10000' }, undefined, {
      shareDatabaseOf: h,
      ownListener: true,
    });
    try {
      const { accountId, key, keyId, jobId } = await accountWithRunningJob();
      const session = await signIn(h, accountId);
      const bySession = track(sessionClient(other, session));
      const byKey = track(keyClient(other, key));
      const sessionSub = await running(bySession, jobId);
      const keySub = await running(byKey, jobId);
      // On the first instance: the logout, then the key's revocation.
      let sent = performance.now();
      await h.request('POST', '/account/api/logout', { headers: { cookie: session.cookie, 'x-csrf-token': session.csrf } });
      const logout = await closedWith(bySession, sessionSub, sent);
      expect(logout.code).toBe(4401);
      expect(byKey.closes).toEqual([]);
      sent = performance.now();
      await h.gql(`mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, { id: keyId }, key);
      const revoke = await closedWith(byKey, keySub, sent);
      expect(revoke.code).toBe(4401);
      process.stdout.write(
        `[socket-credentials ${database}] on another instance: logout closed its socket in ${logout.ms.toFixed(0)} ms, a revocation in ${revoke.ms.toFixed(0)} ms\n`,
      );
    } finally {
      await Promise.all(clients.splice(0).map((c) => c.dispose()));
      await other.close();
    }
  });
});

describe('a socket signed in with an OpenID Connect token', () => {
  it('is closed 4401 at the token’s expiry', async () => {
    const idp = await startFakeIssuer();
    const h = await createHarness({ OIDC_ISSUER: idp.issuer, OIDC_AUDIENCE: 'mediagate-web' });
    let signed: TestClient | null = null;
    try {
      const exp = Math.floor(Date.now() / 1000) + 3;
      const token = await idp.sign({ sub: 'socket-1', name: 'Ole' }, { expiresIn: exp });
      const c = testClient(h, { Authorization: `Bearer ${token}` });
      signed = c;
      // Signed in: a subscription to an unknown job is answered (NOT_FOUND), the socket stays.
      const sub = follow(c, `subscription { jobUpdated(id: "00000000-0000-4000-8000-000000000000") { id } }`, {});
      await until('the answer', () => sub.end);
      expect(sub.end).toEqual({ codes: ['NOT_FOUND'], messages: ['No such job.'] });
      await until('the close at the expiry', () => c.closes.length > 0, 10_000);
      const late = Date.now() - exp * 1000;
      expect(c.closes).toEqual([4401]);
      process.stdout.write(`[socket-credentials] OpenID Connect token: socket closed ${late} ms after its exp\n`);
      expect(late).toBeGreaterThanOrEqual(-50);
      expect(late).toBeLessThan(1500);
    } finally {
      await signed?.dispose();
      await h.close();
      await idp.close();
    }
  });
});
