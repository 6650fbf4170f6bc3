import { SignJWT, exportJWK, generateKeyPair, type JWTPayload } from 'jose';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export const DISCOVERY = '/.well-known/openid-configuration';
export const JWKS = '/jwks.json';

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

/**
 * A local OpenID Connect issuer: discovery document, JWKS, and a signer for test tokens. It counts
 * the requests to each path, and can be made to fail (503) or to hold its answers until released.
 */
export async function startFakeIssuer() {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'test-key-1', alg: 'RS256', use: 'sig' };
  const extraKeys: Record<string, unknown>[] = [];
  const counts = new Map<string, number>();
  const down = new Set<string>();
  let held: Promise<void> | null = null;
  let issuer = '';
  const server = createServer(async (req, res) => {
    const path = req.url ?? '';
    counts.set(path, (counts.get(path) ?? 0) + 1);
    if (held) await held;
    if (down.has(path)) return res.writeHead(503).end();
    const json = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (path === DISCOVERY) return json({ issuer, jwks_uri: `${issuer}${JWKS}`, id_token_signing_alg_values_supported: ['RS256'] });
    if (path === JWKS) return json({ keys: [jwk, ...extraKeys] });
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    /** A token signed by this issuer; `over` changes any claim (iss, aud, exp...), the key, or the algorithm (HS* take a secret). */
    sign: (
      claims: JWTPayload,
      over: {
        audience?: string;
        issuer?: string;
        expiresIn?: string | number;
        key?: PrivateKey;
        alg?: string;
        kid?: string;
        secret?: Uint8Array;
      } = {},
    ) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: over.alg ?? 'RS256', kid: over.kid ?? 'test-key-1' })
        .setIssuer(over.issuer ?? issuer)
        .setAudience(over.audience ?? 'mediagate-web')
        .setIssuedAt()
        .setExpirationTime(over.expiresIn ?? '5m')
        .sign(over.secret ?? over.key ?? privateKey),
    otherKey: async () => (await generateKeyPair('RS256')).privateKey,
    /** The public key in PEM, as anyone can have it. */
    publicKeyPem: async () => (await import('node:crypto')).KeyObject.from(publicKey).export({ type: 'spki', format: 'pem' }) as string,
    /** Adds a key to the JWKS (a misconfigured provider publishing a shared secret, say). */
    publishKey: (key: Record<string, unknown>) => void extraKeys.push(key),
    /** How many requests reached this path. */
    requests: (path: string) => counts.get(path) ?? 0,
    /** Paths that answer 503 from now on. */
    fail: (...paths: string[]) => paths.forEach((p) => down.add(p)),
    /** Answers wait until the returned function is called. */
    hold: () => {
      let release!: () => void;
      held = new Promise<void>((r) => (release = r));
      return () => {
        held = null;
        release();
      };
    },
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}
