import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startFakeIssuer } from '../fakes/oidc.fake.js';
import { createHarness, type Harness, TEST_PEPPER, type TestResponse } from '../support/harness.js';
import { waitFor } from '../support/wait-for.js';
import { follow, keyClient, type TestClient } from '../support/ws-client.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { ErrorBody, GqlError } from '../support/bodies.js';

/**
 * Limits per account beside the per-key ones: one request budget per account whatever proves it
 * (its keys together, its sessions, OpenID Connect tokens, subscribes over the WebSocket), and a cap
 * on the live keys an account may hold, through GraphQL and the CLI.
 */

const run = promisify(execFile);
const NODE = join(process.cwd(), 'node_modules/.bin/node');
const CLI = join(process.cwd(), 'dist/cli/main.js');
const UNKNOWN_JOB = '00000000-0000-4000-8000-000000000000';

const tokenOf = (url: string) => /#login=([A-Za-z0-9_-]+)$/.exec(url)![1];
const cookiePart = (res: TestResponse) => res.headers['set-cookie'].split(';')[0];

describe('per-account limits', () => {
  let h: Harness;
  let idp: Awaited<ReturnType<typeof startFakeIssuer>>;
  beforeAll(async () => {
    idp = await startFakeIssuer();
    h = await createHarness({
      OIDC_ISSUER: idp.issuer,
      OIDC_AUDIENCE: 'mediagate-web',
      RATE_LIMIT_ACCOUNT_PER_MINUTE: '5',
      RATE_LIMIT_PER_MINUTE: '100',
      RATE_LIMIT_IP_PER_MINUTE: '10000',
      API_KEYS_PER_ACCOUNT: '3',
    });
  });
  afterAll(async () => {
    await h?.close();
    await idp?.close();
  });

  const me = (credential: Record<string, string>) =>
    h.request('GET', `/graphql?query=${encodeURIComponent('{ me { id } }')}`, { headers: credential });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  /** A refusal by the account's bucket: 429, the one error body, Retry-After and the RateLimit headers. */
  function expectAccountRefusal(res: TestResponse) {
    expect(res.statusCode).toBe(429);
    const body = res.json<Partial<ErrorBody> & { errors?: GqlError[] }>();
    const error = body.error ?? { code: body.errors?.[0].extensions.code, details: body.errors?.[0].extensions.details };
    expect(error).toMatchObject({ code: 'RATE_LIMITED', details: { limit: 5, windowSeconds: 60 } });
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(res.headers.ratelimit).toMatch(/^limit=5, remaining=0, reset=\d+$/);
  }

  it('counts every key of an account in one bucket: the sixth request of the minute is 429 whichever key sends it; another account is not touched', async () => {
    const { accountId, key } = await h.account();
    const second = (await h.services.apiKeys.create(OPERATOR, accountId, 'second')).key;
    for (const k of [key, key, key, second, second]) expect((await me(bearer(k))).statusCode).toBe(200);
    expectAccountRefusal(await me(bearer(second)));
    const rest = await h.request('GET', `/api/jobs/${UNKNOWN_JOB}`, { headers: bearer(key) });
    expectAccountRefusal(rest);
    // The per-key limit (100) was far away: it is the account's.
    const other = await h.account();
    expect((await me(bearer(other.key))).statusCode).toBe(200);
  });

  it('counts the account area’s session and OpenID Connect tokens in the same bucket as its keys', async () => {
    // An account made by its first OpenID Connect sign-in, then given a key and a session.
    const token = await idp.sign({ sub: 'limits-1', name: 'Lin' });
    const first = await me(bearer(token));
    expect(first.statusCode).toBe(200);
    const accountId = first.json<{ data: { me: { id: string } } }>().data.me.id;
    const { key } = await h.services.apiKeys.create(OPERATOR, accountId, 'k');
    const link = await h.services.sessions.createLoginLink(OPERATOR, accountId);
    const signedIn = await h.request('POST', '/account/api/session', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: tokenOf(link.url) }),
    });
    const cookie = { cookie: cookiePart(signedIn) };
    expect((await me(cookie)).statusCode).toBe(200);
    expect((await me(bearer(key))).statusCode).toBe(200);
    expect((await me(bearer(token))).statusCode).toBe(200);
    expect((await me(cookie)).statusCode).toBe(200);
    // Six: the OIDC sign-in, the session twice, the key, the token again; then each is refused.
    expectAccountRefusal(await me(cookie));
    expectAccountRefusal(await me(bearer(token)));
    expectAccountRefusal(await me(bearer(key)));
  });

  it('counts subscribes over the WebSocket in the account’s bucket too', async () => {
    const { accountId, key } = await h.account();
    const second = (await h.services.apiKeys.create(OPERATOR, accountId, 'socket')).key;
    for (let i = 0; i < 5; i++) expect((await me(bearer(key))).statusCode).toBe(200);
    const c: TestClient = keyClient(h, second);
    try {
      const sub = follow(c, `subscription { jobUpdated(id: "${UNKNOWN_JOB}") { id } }`, {});
      await waitFor(() => sub.end, { describe: 'the refusal' });
      expect(sub.end).toEqual({ codes: ['RATE_LIMITED'], messages: [expect.stringMatching(/^Too many requests; retry in \d+ s\.$/)] });
    } finally {
      await c.dispose();
    }
  });
});

describe('a cap on the live API keys of an account', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ API_KEYS_PER_ACCOUNT: '3' });
  });
  afterAll(async () => {
    await h?.close();
  });

  const create = (key: string, name: string) =>
    h.gql<{ createApiKey: { key: string; apiKey: { id: string } } | null }>(
      `mutation($name: String!) { createApiKey(name: $name) { key apiKey { id } } }`,
      { name },
      key,
    );
  const REFUSAL = {
    message: 'An account may hold at most 3 live API keys; revoke one before creating another.',
    extensions: { code: 'FORBIDDEN', details: { limit: 3, live: 3 } },
  };

  it('refuses createApiKey past API_KEYS_PER_ACCOUNT with FORBIDDEN (the contract’s 403 code); revoking one makes room', async () => {
    const { key, accountId } = await h.account();
    const second = await create(key, 'second');
    const third = await create(key, 'third');
    expect([second.data.createApiKey?.key, third.data.createApiKey?.key]).toEqual([expect.any(String), expect.any(String)]);
    const refused = await create(key, 'fourth');
    expect(refused.data).toBeNull();
    expect(refused.errors).toEqual([expect.objectContaining(REFUSAL)]);
    expect((await h.sql(`select id from api_key where account_id = ?`, [accountId])).length).toBe(3);
    // A revoked key no longer counts.
    await h.gql(`mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, { id: third.data.createApiKey!.apiKey.id }, key);
    expect((await create(key, 'fourth')).data.createApiKey?.key).toEqual(expect.any(String));
    expect((await create(key, 'fifth')).errors).toEqual([expect.objectContaining(REFUSAL)]);
  });

  it('holds under concurrent creations: ten at once leave exactly three live keys', async () => {
    const { key, accountId } = await h.account();
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => create(key, `burst ${i}`)));
    expect(answers.filter((a) => a.data?.createApiKey).length).toBe(2);
    expect(answers.filter((a) => a.errors?.[0]?.extensions.code === 'FORBIDDEN').length).toBe(8);
    expect((await h.sql(`select id from api_key where account_id = ? and revoked_at is null`, [accountId])).length).toBe(3);
  });

  it('refuses `mediagate key create` past the cap with the same error, exit code 1', async () => {
    const { accountId } = await h.account();
    await h.services.apiKeys.create(OPERATOR, accountId, 'two');
    await h.services.apiKeys.create(OPERATOR, accountId, 'three');
    const cli = run(NODE, [CLI, '--json', 'key', 'create', accountId, '--name', 'four'], {
      env: {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        API_KEY_PEPPER: TEST_PEPPER,
        DATABASE_URL: h.clientUrl,
        API_KEYS_PER_ACCOUNT: '3',
      },
    });
    const failed = await cli.then(
      () => null,
      (err: { code: number; stdout: string }) => err,
    );
    expect(failed?.code).toBe(1);
    expect(JSON.parse(failed!.stdout.trim())).toEqual({
      error: { code: REFUSAL.extensions.code, message: REFUSAL.message, details: { limit: 3, live: 3 } },
    });
  }, 60_000);
});
