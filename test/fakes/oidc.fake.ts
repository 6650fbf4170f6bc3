import { SignJWT, exportJWK, generateKeyPair, type JWTPayload } from 'jose';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A local OpenID Connect issuer: discovery document, JWKS, and a signer for test tokens. */
export async function startFakeIssuer() {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'test-key-1', alg: 'RS256', use: 'sig' };
  let issuer = '';
  const server = createServer((req, res) => {
    const json = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.url === '/.well-known/openid-configuration') return json({ issuer, jwks_uri: `${issuer}/jwks.json`, id_token_signing_alg_values_supported: ['RS256'] });
    if (req.url === '/jwks.json') return json({ keys: [jwk] });
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    /** A token signed by this issuer; `over` changes any claim (iss, aud, exp...). */
    sign: (claims: JWTPayload, over: { audience?: string; issuer?: string; expiresIn?: string | number; key?: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'] } = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'test-key-1' })
        .setIssuer(over.issuer ?? issuer)
        .setAudience(over.audience ?? 'mediagate-web')
        .setIssuedAt()
        .setExpirationTime(over.expiresIn ?? '5m')
        .sign(over.key ?? privateKey),
    otherKey: async () => (await generateKeyPair('RS256')).privateKey,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}
