import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Provider from 'oidc-provider';
import type { Browser } from 'playwright-core';
import { createHarness, type Harness } from '../support/harness.js';
import { SCREENSHOTS, launchBrowser } from '../support/browser.js';
import type { GqlError } from '../support/bodies.js';

/**
 * Signing in to the account area through OpenID Connect: a real OpenID provider (node
 * oidc-provider) on loopback, Authorization Code with PKCE in the browser, the ID token verified by
 * the gateway against the provider's JWKS and exchanged once, with its nonce's verifier, for the
 * session cookie.
 */
describe('the account area in a real browser (OpenID Connect with PKCE)', () => {
  let h: Harness;
  let browser: Browser;
  let idp: Server;
  let issuer: string;
  const tokenRequests: string[] = [];
  // oidc-provider warns that its development defaults are for development, which this is.
  const warn = console.warn;

  beforeAll(async () => {
    console.warn = (...args: unknown[]) => void (String(args[0]).startsWith('oidc-provider WARNING') || warn(...args));
    // The gateway's address is needed for the client's redirect URI, and the issuer's for the gateway.
    idp = createServer();
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
    h = await createHarness({ OIDC_ISSUER: issuer, OIDC_AUDIENCE: 'mediagate-account', OIDC_CLIENT_ID: 'mediagate-account' });
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: 'mediagate-account',
          application_type: 'native', // loopback http redirect URIs are allowed for native clients
          token_endpoint_auth_method: 'none', // a public client: the browser holds no secret, PKCE protects the code
          redirect_uris: [`${h.url}/account/`],
          post_logout_redirect_uris: [`${h.url}/account/`],
          grant_types: ['authorization_code'],
          response_types: ['code'],
        },
      ],
      findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub, name: `Ada ${sub}`, email: `${sub}@example.com` }) }),
      claims: { openid: ['sub'], profile: ['name'], email: ['email'] },
      // The gateway reads the name from the ID token itself (it calls no userinfo endpoint).
      conformIdTokenClaims: false,
      clientBasedCORS: (_ctx, origin) => origin === h.url,
      features: { devInteractions: { enabled: true } },
    });
    provider.on('grant.success', () => tokenRequests.push('code exchanged'));
    // The provider's development pages ask for a favicon it does not have: a stand-in should not fail the page checks.
    const callback = provider.callback();
    idp.on('request', (req, res) => (req.url === '/favicon.ico' ? res.writeHead(204).end() : callback(req, res)));
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    console.warn = warn;
    await browser?.close();
    await h?.close();
    idp?.closeAllConnections();
    await new Promise<void>((r) => idp?.close(() => r()));
  });

  it('signs in with the provider (code + PKCE + nonce), exchanges the ID token for the session cookie, and shows the account made on first sign-in', async () => {
    const page = await browser.newPage({ viewport: { width: 1024, height: 800 } });
    // The provider's development pages import Google Fonts; on this closed network they get an empty stylesheet.
    await page.route('https://fonts.googleapis.com/**', (route) => route.fulfill({ status: 200, contentType: 'text/css', body: '' }));
    const authorize: URL[] = [];
    const exchanges: { idToken: string; nonceVerifier: string }[] = [];
    const idTokens: string[] = [];
    page.on('request', (r) => {
      if (r.url().startsWith(`${issuer}/auth`)) authorize.push(new URL(r.url()));
      if (r.url() === `${h.url}/account/api/session/oidc`) exchanges.push(r.postDataJSON());
    });
    page.on('response', async (r) => {
      if (r.url() === `${issuer}/token` && r.request().method() === 'POST')
        idTokens.push(((await r.json()) as { id_token: string }).id_token);
    });
    await page.goto(`${h.url}/account/`);
    await page.getByRole('button', { name: `Sign in with 127.0.0.1:${new URL(issuer).port}` }).click();
    // The provider's own sign-in and consent pages.
    await page.locator('input[name="login"]').fill('ada');
    await page.locator('input[name="password"]').fill('any');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor({ timeout: 20_000 });
    expect(authorize[0].searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize[0].searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(tokenRequests).toEqual(['code exchanged']);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Ada ada');
    // Signed in through OIDC without a membership: the page says what that means.
    expect(await page.getByTestId('membership').textContent()).toMatch(/^No membership/);
    expect(new URL(page.url()).search).toBe('');
    await page.screenshot({ path: join(SCREENSHOTS, 'oidc-overview.png'), fullPage: true });

    // The nonce the page sent is the hash of a verifier only it held, and the ID token carries it.
    const nonce = authorize[0].searchParams.get('nonce');
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(exchanges).toHaveLength(1);
    const [{ idToken, nonceVerifier }] = exchanges;
    expect(idToken).toBe(idTokens[0]);
    expect(createHash('sha256').update(nonceVerifier).digest('base64url')).toBe(nonce);
    expect(JSON.parse(Buffer.from(idToken.split('.')[1], 'base64url').toString()).nonce).toBe(nonce);
    // From then on the page holds only the HttpOnly cookie: no token in storage, no Authorization header.
    expect(await page.evaluate('JSON.stringify(Object.keys(sessionStorage).concat(Object.keys(localStorage)))')).toBe('[]');
    const cookies = await page.context().cookies();
    expect(cookies.filter((c) => c.domain === '127.0.0.1' && c.name.includes('mg_session'))).toEqual([
      expect.objectContaining({ name: '__Host-mg_session', httpOnly: true, secure: true, sameSite: 'Strict', path: '/' }),
    ]);
    const [graphql] = await Promise.all([page.waitForRequest(`${h.url}/graphql`), page.reload()]);
    expect(graphql.headers().authorization).toBeUndefined();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();

    // The same ID token opens no second session, and the Bearer token can read but never make a key.
    const exchangeAgain = await fetch(`${h.url}/account/api/session/oidc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ idToken, nonceVerifier }),
    });
    expect(exchangeAgain.status).toBe(401);
    const ask = (bearer: string, query: string) =>
      fetch(`${h.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
        body: JSON.stringify({ query }),
      }).then((r) => r.json() as Promise<{ data: { me: { name: string } } | null; errors: GqlError[] }>);
    expect((await ask(idToken, '{ me { name } }')).data?.me.name).toBe('Ada ada');
    expect((await ask(idToken, 'mutation { createApiKey(name: "leaked") { key } }')).errors[0].extensions.code).toBe('FORBIDDEN');
    // A tampered token opens nothing at the gateway.
    const tampered = idToken.slice(0, -4) + (idToken.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    const refused = await ask(tampered, '{ me { name } }');
    expect(refused.data).toBeNull();
    expect(refused.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    const rest = await fetch(`${h.url}/api/parse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tampered}` },
      body: '{"url":"https://example.com/"}',
    });
    expect(rest.status).toBe(401);

    // Signing out ends the session on the server.
    const session = cookies.find((c) => c.name === '__Host-mg_session')!;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to your mediagate account' }).waitFor();
    expect((await fetch(`${h.url}/account/api/session`, { headers: { cookie: `__Host-mg_session=${session.value}` } })).status).toBe(204);
    const me = await fetch(`${h.url}/graphql?query=${encodeURIComponent('{ me { id } }')}`, {
      headers: { cookie: `__Host-mg_session=${session.value}` },
    });
    expect(((await me.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    await page.close();
  });
});
