import { createHash } from 'node:crypto';
import { createHarness, type Harness } from '../support/harness.js';
import { DISCOVERY, JWKS, startFakeIssuer } from '../fakes/oidc.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { RENDITIONS_PAGE } from '../support/factories.js';
import { parseSetCookie } from '../support/set-cookie.js';
import { waitFor } from '../support/wait-for.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { ErrorBody, GqlRefusal, SessionBody } from '../support/bodies.js';

const UNAUTHENTICATED_KEY = { code: 'UNAUTHENTICATED', message: 'A valid API key is required (Authorization: Bearer <key>).' };
/** The nonce a page that keeps `verifier` puts in its sign-in: base64url(SHA-256(verifier)). */
const nonceOf = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');
const VERIFIER = 'v'.repeat(43);

/** Polls until the condition holds (each look is a real observation, not a guess at timing). */
const until = (condition: () => boolean, what: string) => waitFor(condition, { describe: what, timeout: 10_000, interval: 1 });

/** A shared secret that a misconfigured provider publishes in its JWKS: HS256 must still be refused. */
const SHARED_SECRET = new TextEncoder().encode('a shared secret of thirty-two bytes!');

describe('frontend sign-in with OpenID Connect', () => {
  let h: Harness;
  let idp: Awaited<ReturnType<typeof startFakeIssuer>>;
  let site: FakeSite;
  beforeAll(async () => {
    idp = await startFakeIssuer();
    idp.publishKey({ kty: 'oct', kid: 'shared', alg: 'HS256', k: Buffer.from(SHARED_SECRET).toString('base64url') });
    site = await startFakeSite();
    site.page('/v', RENDITIONS_PAGE);
    h = await createHarness({ OIDC_ISSUER: idp.issuer, OIDC_AUDIENCE: 'mediagate-web', FETCH_ALLOW_HOSTS: site.hostPort });
  });
  afterAll(async () => {
    await h.close();
    await idp.close();
    await site.close();
  });

  it('verifies the token against the issuer’s JWKS and makes the account on first sign-in', async () => {
    const token = await idp.sign({ sub: 'user-1', name: 'Grace', email: 'grace@example.com' });
    const first = await h.gql<{ me: { id: string; name: string } }>(
      '{ me { id name email membership { active } credits { available } } }',
      {},
      token,
    );
    expect(first.errors).toBeUndefined();
    expect(first.data.me).toMatchObject({ name: 'Grace', email: 'grace@example.com', membership: null, credits: { available: 0 } });
    const again = await h.gql<{ me: { id: string } }>('{ me { id } }', {}, await idp.sign({ sub: 'user-1' }));
    expect(again.data.me.id).toBe(first.data.me.id);
  });

  it('lets a signed-in user without membership parse on the free tier (720 and below) only', async () => {
    const token = await idp.sign({ sub: 'user-2', name: 'Free' });
    const me = (await h.gql<{ me: { id: string } }>('{ me { id } }', {}, token)).data.me;
    await h.services.ledger.grant(me.id, 3, 'test');
    const free = await h.rest('/api/parse', { url: `${site.origin}/v` }, token);
    expect(free.statusCode).toBe(200);
    expect(free.json()).toMatchObject({
      quality: '720',
      media: { url: 'https://cdn.example/v-720.mp4' },
      credits: { charged: 1, balance: 2 },
    });
    const hd = await h.rest('/api/parse', { url: `${site.origin}/v`, quality: '1080' }, token);
    expect(hd.statusCode).toBe(403);
    expect(hd.json<ErrorBody>().error.code).toBe('MEMBERSHIP_REQUIRED');
    const transcribe = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/a.mp3` }, token);
    expect(transcribe.statusCode).toBe(403);
  });

  it('lets a Bearer ID token read but never make credentials: no API key, no webhook secret (403 FORBIDDEN, nothing changed)', async () => {
    const token = await idp.sign({ sub: 'user-keys', name: 'Keyless' });
    const me = await h.gql<{ me: { id: string; name: string } }>('{ me { id name } }', {}, token);
    expect(me.errors).toBeUndefined();
    expect(me.data.me.name).toBe('Keyless');
    const accountId = me.data.me.id;
    const existing = await h.repositories.webhookSecrets.get(accountId);
    for (const query of [
      'mutation { createApiKey(name: "leaked") { key } }',
      'mutation { rotateWebhookSecret { secret } }',
      '{ webhookSecret { secret } }',
      '{ apiKeys { id } }',
    ]) {
      const refused = await h.gql(query, {}, token);
      expect({ query, codes: refused.errors?.map((e) => e.extensions.code), data: refused.data }).toEqual({
        query,
        codes: ['FORBIDDEN'],
        data: null,
      });
      expect(refused.errors![0].message).toMatch(/OpenID Connect token lacks the "keys" scope/);
    }
    expect(await h.services.apiKeys.list(OPERATOR, accountId)).toHaveLength(0);
    expect((await h.repositories.webhookSecrets.get(accountId)).secret).toBe(existing.secret);
    // Reading its own account, history and usage stays open to it.
    const read = await h.gql('{ me { id } creditHistory(first: 1) { edges { cursor } } }', {}, token);
    expect(read.errors).toBeUndefined();
  });

  it.each([
    [
      'alg HS256 with the public key as the shared secret',
      async () => idp.sign({ sub: 'x' }, { alg: 'HS256', secret: new TextEncoder().encode(await idp.publicKeyPem()) }),
    ],
    [
      'alg HS256 with a secret the JWKS publishes',
      async () => idp.sign({ sub: 'x' }, { alg: 'HS256', kid: 'shared', secret: SHARED_SECRET }),
    ],
    [
      'alg none',
      async () =>
        `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'x', iss: idp.issuer, aud: 'mediagate-web', exp: 2e9 })).toString('base64url')}.`,
    ],
    ['an azp naming another client', async () => idp.sign({ sub: 'x', azp: 'another-client' })],
    ['another audience', async () => idp.sign({ sub: 'x' }, { audience: 'someone-else' })],
    ['another issuer', async () => idp.sign({ sub: 'x' }, { issuer: 'https://evil.example' })],
    ['an expired token', async () => idp.sign({ sub: 'x' }, { expiresIn: Math.floor(Date.now() / 1000) - 3600 })],
    ['a signature from another key', async () => idp.sign({ sub: 'x' }, { key: await idp.otherKey() })],
    ['no subject', async () => idp.sign({})],
  ])('refuses %s with the same 401, and makes no account', async (_label, make) => {
    const accounts = async () => (await h.sql<{ n: number }>(`select count(*)::int as n from account`))[0].n;
    const before = await accounts();
    const token = await make();
    const res = await h.rest('/api/parse', { url: `${site.origin}/v` }, token);
    expect(res.statusCode).toBe(401);
    expect(res.json<ErrorBody>().error).toMatchObject(UNAUTHENTICATED_KEY);
    expect((await h.gql('{ me { id } }', {}, token)).errors?.[0].extensions.code).toBe('UNAUTHENTICATED');
    expect(await accounts()).toBe(before);
  });

  it('accepts an azp that names the audience', async () => {
    const me = await h.gql<{ me: { name: string } }>(
      '{ me { name } }',
      {},
      await idp.sign({ sub: 'user-azp', name: 'Azp', azp: 'mediagate-web' }),
    );
    expect(me.errors).toBeUndefined();
    expect(me.data.me.name).toBe('Azp');
  });

  describe('exchanged once for the account area’s session (POST /account/api/session/oidc)', () => {
    const exchange = (body: unknown, headers: Record<string, string> = {}) =>
      h.request('POST', '/account/api/session/oidc', {
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    const sessionsOf = async (accountId: string) =>
      (
        await h.sql<{ n: number }>(`select count(*)::int as n from account_session where account_id = ? and revoked_at is null`, [
          accountId,
        ])
      )[0].n;

    it('opens a __Host- session with every scope of a session when the nonce is the hash of the page’s verifier, once per token', async () => {
      const idToken = await idp.sign({ sub: 'user-x', name: 'Exchanged', nonce: nonceOf(VERIFIER) });
      const res = await exchange({ idToken, nonceVerifier: VERIFIER });
      expect(res.statusCode).toBe(200);
      const body = res.json<SessionBody>();
      expect(body).toEqual({
        csrfToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        expiresAt: expect.any(String),
        account: { id: expect.any(String), name: 'Exchanged' },
      });
      const cookie = parseSetCookie(res.headers['set-cookie']);
      expect(cookie).toMatchObject({
        name: '__Host-mg_session',
        attributes: { path: '/', secure: true, httponly: true, samesite: 'Strict' },
      });
      expect(cookie.attributes.domain).toBeUndefined();
      // The same account the Bearer token names; the session may make keys (the page's own work).
      expect((await h.gql<{ me: { id: string } }>('{ me { id } }', {}, idToken)).data.me.id).toBe(body.account.id);
      const made = await h.request('POST', '/graphql', {
        headers: { 'content-type': 'application/json', cookie: `${cookie.name}=${cookie.value}`, 'x-csrf-token': body.csrfToken },
        body: JSON.stringify({ query: 'mutation { createApiKey(name: "from the page") { apiKey { name } } }' }),
      });
      expect(made.json()).toEqual({ data: { createApiKey: { apiKey: { name: 'from the page' } } } });
      // The same token again, verifier and all: 401, no second session.
      const again = await exchange({ idToken, nonceVerifier: VERIFIER });
      expect(again.statusCode).toBe(401);
      expect(again.headers['set-cookie']).toBeUndefined();
      expect(await sessionsOf(body.account.id)).toBe(1);
    });

    it('refuses a wrong verifier, a token without a nonce or with another, a bad token, with the same 401; no account, no session', async () => {
      const accounts = async () => (await h.sql<{ n: number }>(`select count(*)::int as n from account`))[0].n;
      const before = await accounts();
      const cases = [
        { idToken: await idp.sign({ sub: 'user-n1', nonce: nonceOf(VERIFIER) }), nonceVerifier: 'w'.repeat(43) },
        { idToken: await idp.sign({ sub: 'user-n2', nonce: nonceOf(VERIFIER) }), nonceVerifier: nonceOf(VERIFIER) },
        { idToken: await idp.sign({ sub: 'user-n3' }), nonceVerifier: VERIFIER },
        { idToken: await idp.sign({ sub: 'user-n4', nonce: VERIFIER }), nonceVerifier: VERIFIER },
        { idToken: await idp.sign({ sub: 'user-n5', nonce: nonceOf(VERIFIER) }, { audience: 'someone-else' }), nonceVerifier: VERIFIER },
        { idToken: await idp.sign({ sub: 'user-n6', nonce: nonceOf(VERIFIER), azp: 'another-client' }), nonceVerifier: VERIFIER },
        { idToken: 'not.a.token', nonceVerifier: VERIFIER },
        { idToken: await idp.sign({ sub: 'user-n7', nonce: nonceOf('short') }), nonceVerifier: 'short' },
      ];
      const bodies = new Set<string>();
      for (const body of cases) {
        const res = await exchange(body);
        expect(res.statusCode).toBe(401);
        expect(res.headers['set-cookie']).toBeUndefined();
        const { requestId: _id, ...error } = res.json<ErrorBody>().error;
        bodies.add(JSON.stringify(error));
      }
      expect([...bodies].map((b) => JSON.parse(b))).toEqual([
        { code: 'UNAUTHENTICATED', message: expect.stringMatching(/^This sign-in is not valid/) },
      ]);
      for (const body of [{ idToken: await idp.sign({ sub: 'user-n8', nonce: nonceOf(VERIFIER) }) }, { nonceVerifier: VERIFIER }, []]) {
        const res = await exchange(body);
        expect(res.statusCode).toBe(400);
        expect(res.json<ErrorBody>().error.code).toBe('INVALID_INPUT');
      }
      expect(await accounts()).toBe(before);
    });

    it('ends the browser’s live session, only with its CSRF token (403 otherwise, nothing changed)', async () => {
      const ada = await h.services.accounts.create(OPERATOR, { name: 'Ada' });
      const signedIn = await h.request('POST', '/account/api/session', {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: /#login=(.+)$/.exec((await h.services.sessions.createLoginLink(OPERATOR, ada.id)).url)![1] }),
      });
      const adaCookie = signedIn.headers['set-cookie'].split(';')[0];
      const idToken = await idp.sign({ sub: 'user-switch', name: 'Switch', nonce: nonceOf(VERIFIER) });
      const refused = await exchange({ idToken, nonceVerifier: VERIFIER }, { cookie: adaCookie });
      expect(refused.statusCode).toBe(403);
      expect(refused.json<ErrorBody>().error.code).toBe('FORBIDDEN');
      expect(await sessionsOf(ada.id)).toBe(1);
      expect((await h.sql<{ n: number }>(`select count(*)::int as n from account where name = 'Switch'`))[0].n).toBe(0);
      const switched = await exchange(
        { idToken, nonceVerifier: VERIFIER },
        { cookie: adaCookie, 'x-csrf-token': signedIn.json<SessionBody>().csrfToken },
      );
      expect(switched.statusCode).toBe(200);
      expect(switched.json<SessionBody>().account.name).toBe('Switch');
      expect((await h.request('GET', '/account/api/session', { headers: { cookie: adaCookie } })).statusCode).toBe(204);
      expect(
        (
          await h.request('GET', `/graphql?query=${encodeURIComponent('{ me { id } }')}`, { headers: { cookie: adaCookie } })
        ).json<GqlRefusal>().errors[0].extensions.code,
      ).toBe('UNAUTHENTICATED');
      expect(await sessionsOf(ada.id)).toBe(0);
    });
  });
});

describe('an OpenID Connect provider that does not answer', () => {
  const query = '{ me { id } }';

  it('is asked for its discovery document once by concurrent requests, and not again within the negative-cache window', async () => {
    const idp = await startFakeIssuer();
    const h = await createHarness({ OIDC_ISSUER: idp.issuer, OIDC_AUDIENCE: 'mediagate-web' });
    try {
      idp.fail(DISCOVERY);
      const release = idp.hold();
      let arrived = 0;
      h.app.server.on('request', () => arrived++);
      const token = await idp.sign({ sub: 'user-down' });
      const burst = Promise.all(Array.from({ length: 8 }, () => h.gql(query, {}, token)));
      // All eight are at the gateway and its discovery request is waiting at the provider.
      await until(() => arrived >= 8 && idp.requests(DISCOVERY) >= 1, 'the burst to reach the gateway');
      release();
      for (const answer of await burst) expect(answer.errors?.[0].extensions.code).toBe('UNAUTHENTICATED');
      expect(idp.requests(DISCOVERY)).toBe(1);
      // Within the window: refused at once, the provider is not asked again.
      const started = Date.now();
      for (const answer of await Promise.all(Array.from({ length: 5 }, () => h.gql(query, {}, token))))
        expect(answer.errors?.[0].extensions.code).toBe('UNAUTHENTICATED');
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(idp.requests(DISCOVERY)).toBe(1);
      expect(idp.requests(JWKS)).toBe(0);
    } finally {
      await h.close();
      await idp.close();
    }
  });

  it('is asked for its keys once by concurrent requests, and not again within the window', async () => {
    const idp = await startFakeIssuer();
    const h = await createHarness({ OIDC_ISSUER: idp.issuer, OIDC_AUDIENCE: 'mediagate-web', OIDC_JWKS_URL: `${idp.issuer}${JWKS}` });
    try {
      idp.fail(JWKS);
      const release = idp.hold();
      let arrived = 0;
      h.app.server.on('request', () => arrived++);
      const token = await idp.sign({ sub: 'user-down' });
      const burst = Promise.all(Array.from({ length: 8 }, () => h.gql(query, {}, token)));
      await until(() => arrived >= 8 && idp.requests(JWKS) >= 1, 'the burst to reach the gateway');
      release();
      for (const answer of await burst) expect(answer.errors?.[0].extensions.code).toBe('UNAUTHENTICATED');
      for (const answer of await Promise.all(Array.from({ length: 5 }, () => h.gql(query, {}, token))))
        expect(answer.errors?.[0].extensions.code).toBe('UNAUTHENTICATED');
      expect(idp.requests(JWKS)).toBe(1);
      expect(idp.requests(DISCOVERY)).toBe(0);
    } finally {
      await h.close();
      await idp.close();
    }
  });
});
