import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';

export interface OidcOptions {
  issuer: string;
  audience: string;
  /** Unset: the issuer's discovery document's jwks_uri. */
  jwksUrl: string | null;
}

/** The identity a valid token names. */
export interface OidcIdentity {
  subject: string;
  name: string | null;
  email: string | null;
}

/**
 * Verifies frontends' OpenID Connect tokens (signature against the issuer's JWKS, issuer, audience,
 * expiry) with jose. The issuer and JWKS URLs are operator-set and trusted; keys are cached and
 * refetched by jose when a token names an unknown key id.
 */
export class OidcVerifier {
  private jwks: ReturnType<typeof createRemoteJWKSet> | null = null;

  constructor(private readonly options: OidcOptions) {}

  /** The identity in a valid token; throws on any problem (the caller answers 401 alike). */
  async verify(token: string): Promise<OidcIdentity> {
    const { payload } = await jwtVerify(token, await this.keys(), {
      issuer: this.options.issuer,
      audience: this.options.audience,
      clockTolerance: 30,
    });
    if (!payload.sub) throw new Error('token has no subject');
    return { subject: `${this.options.issuer}|${payload.sub}`, name: claim(payload, 'name'), email: claim(payload, 'email') };
  }

  private async keys() {
    if (this.jwks) return this.jwks;
    let url = this.options.jwksUrl;
    if (!url) {
      const res = await fetch(`${this.options.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(10_000) });
      if (!res.ok) throw new Error(`discovery answered ${res.status}`);
      url = String(((await res.json()) as { jwks_uri?: string }).jwks_uri ?? '');
      if (!url) throw new Error('discovery document names no jwks_uri');
    }
    this.jwks = createRemoteJWKSet(new URL(url), { timeoutDuration: 10_000, cooldownDuration: 30_000 });
    return this.jwks;
  }
}

function claim(payload: JWTPayload, name: string): string | null {
  const v = payload[name];
  return typeof v === 'string' && v.trim() ? v.trim().slice(0, 200) : null;
}
