import { createHarness, type Harness } from '../support/harness.js';
import { startFakeIssuer } from '../fakes/oidc.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';

describe('frontend sign-in with OpenID Connect', () => {
  let h: Harness;
  let idp: Awaited<ReturnType<typeof startFakeIssuer>>;
  let site: FakeSite;
  beforeAll(async () => {
    idp = await startFakeIssuer();
    site = await startFakeSite();
    site.page('/v', `<html><head>
      <meta property="og:video" content="https://cdn.example/v-1080.mp4"><meta property="og:video:type" content="video/mp4"><meta property="og:video:height" content="1080">
      <meta property="og:video" content="https://cdn.example/v-720.mp4"><meta property="og:video:type" content="video/mp4"><meta property="og:video:height" content="720">
    </head></html>`);
    h = await createHarness({ OIDC_ISSUER: idp.issuer, OIDC_AUDIENCE: 'mediagate-web', FETCH_ALLOW_HOSTS: site.hostPort });
  });
  afterAll(async () => {
    await h.close();
    await idp.close();
    await site.close();
  });

  it('verifies the token against the issuer’s JWKS and makes the account on first sign-in', async () => {
    const token = await idp.sign({ sub: 'user-1', name: 'Grace', email: 'grace@example.com' });
    const first = await h.gql('{ me { id name email membership { active } credits { available } } }', {}, token);
    expect(first.errors).toBeUndefined();
    expect(first.data.me).toMatchObject({ name: 'Grace', email: 'grace@example.com', membership: null, credits: { available: 0 } });
    const again = await h.gql('{ me { id } }', {}, await idp.sign({ sub: 'user-1' }));
    expect(again.data.me.id).toBe(first.data.me.id);
  });

  it('lets a signed-in user without membership parse on the free tier (720 and below) only', async () => {
    const token = await idp.sign({ sub: 'user-2', name: 'Free' });
    const me = (await h.gql('{ me { id } }', {}, token)).data.me;
    await h.services.ledger.grant(me.id, 3, 'test');
    const free = await h.rest('/api/parse', { url: `${site.origin}/v` }, token);
    expect(free.statusCode).toBe(200);
    expect(free.json()).toMatchObject({ quality: '720', media: { url: 'https://cdn.example/v-720.mp4' }, credits: { charged: 1, balance: 2 } });
    const hd = await h.rest('/api/parse', { url: `${site.origin}/v`, quality: '1080' }, token);
    expect(hd.statusCode).toBe(403);
    expect(hd.json().error.code).toBe('MEMBERSHIP_REQUIRED');
    const transcribe = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/a.mp3` }, token);
    expect(transcribe.statusCode).toBe(403);
  });

  it.each([
    ['another audience', async () => idp.sign({ sub: 'x' }, { audience: 'someone-else' })],
    ['another issuer', async () => idp.sign({ sub: 'x' }, { issuer: 'https://evil.example' })],
    ['an expired token', async () => idp.sign({ sub: 'x' }, { expiresIn: Math.floor(Date.now() / 1000) - 3600 })],
    ['a signature from another key', async () => idp.sign({ sub: 'x' }, { key: await idp.otherKey() })],
    ['no subject', async () => idp.sign({})],
  ])('refuses %s with the same 401', async (_label, make) => {
    const res = await h.rest('/api/parse', { url: `${site.origin}/v` }, await make());
    expect(res.statusCode).toBe(401);
    expect(res.json().error).toMatchObject({ code: 'UNAUTHENTICATED', message: 'A valid API key is required (Authorization: Bearer <key>).' });
  });
});
