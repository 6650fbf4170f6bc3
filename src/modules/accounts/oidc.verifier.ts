import { createRemoteJWKSet, customFetch, jwtVerify, type JWTPayload } from 'jose';

export interface OidcOptions {
  issuer: string;
  audience: string;
  /** Unset: the issuer's discovery document's jwks_uri. */
  jwksUrl: string | null;
  /** The account page's client id: a token's `azp` may name it or the audience. */
  clientId?: string | null;
  /** After the provider failed to answer (discovery or keys), how long tokens are refused without asking it again. */
  retryAfterFailureMs?: number;
}

/** The identity a valid token names. */
export interface OidcIdentity {
  subject: string;
  name: string | null;
  email: string | null;
  /** The token's `exp`: when it stops being accepted. */
  expiresAt?: Date;
}

/** Asymmetric signatures only: never `none`, never HS* (whose key would be the public JWKS itself). */
export const OIDC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

const TIMEOUT_MS = 10_000;
const RETRY_AFTER_FAILURE_MS = 30_000;

/**
 * Verifies frontends' OpenID Connect tokens with jose: the signature against the issuer's JWKS with
 * an asymmetric algorithm, issuer, audience, expiry, and `azp` when present. The issuer and JWKS
 * URLs are operator-set and trusted; keys are cached and refetched by jose when a token names an
 * unknown key id. Discovery is fetched once at a time, and after the provider failed to answer
 * (discovery or keys), tokens are refused at once for a while rather than each waiting on it again.
 */
export class OidcVerifier {
  private jwks: ReturnType<typeof createRemoteJWKSet> | null = null;
  private discovering: Promise<ReturnType<typeof createRemoteJWKSet>> | null = null;
  private failedAt = -Infinity;
  private readonly retryAfterFailureMs: number;

  constructor(
    private readonly options: OidcOptions,
    private readonly log?: { warn(obj: object, msg: string): void },
  ) {
    this.retryAfterFailureMs = options.retryAfterFailureMs ?? RETRY_AFTER_FAILURE_MS;
  }

  /**
   * The identity in a valid token; throws on any problem (the caller answers 401 alike). With
   * `nonce`, the token must carry exactly that nonce (the sign-in the page started).
   */
  async verify(token: string, expect: { nonce?: string } = {}): Promise<OidcIdentity> {
    const { payload } = await jwtVerify(token, await this.keys(), {
      issuer: this.options.issuer,
      audience: this.options.audience,
      algorithms: OIDC_ALGORITHMS,
      clockTolerance: 30,
    });
    if (!payload.sub) throw new Error('token has no subject');
    // OpenID Connect Core 3.1.3.7: the authorized party, when named, must be this client.
    if (payload.azp !== undefined && payload.azp !== this.options.audience && payload.azp !== this.options.clientId)
      throw new Error('token is for another party');
    if (expect.nonce !== undefined && payload.nonce !== expect.nonce) throw new Error('token has another nonce');
    return {
      subject: `${this.options.issuer}|${payload.sub}`,
      name: claim(payload, 'name'),
      email: claim(payload, 'email'),
      expiresAt: typeof payload.exp === 'number' ? new Date(payload.exp * 1000) : undefined,
    };
  }

  private async keys() {
    if (this.jwks) return this.jwks;
    // Concurrent verifications share one discovery.
    this.discovering ??= this.discover().finally(() => (this.discovering = null));
    return this.discovering;
  }

  private async discover() {
    let url = this.options.jwksUrl;
    if (!url) {
      const discovery = `${this.options.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
      const res = await this.fetch(discovery, { signal: AbortSignal.timeout(TIMEOUT_MS) });
      const document = (await res.json().catch(() => null)) as { jwks_uri?: unknown } | null;
      url = typeof document?.jwks_uri === 'string' ? document.jwks_uri : '';
      if (!URL.canParse(url)) throw this.failed(new Error('the discovery document names no jwks_uri'));
    }
    this.jwks = createRemoteJWKSet(new URL(url), { timeoutDuration: TIMEOUT_MS, cooldownDuration: 30_000, [customFetch]: this.fetch });
    return this.jwks;
  }

  /** fetch, refused at once while the provider failed within retryAfterFailureMs. */
  private readonly fetch = async (url: string, init: RequestInit): Promise<Response> => {
    if (performance.now() - this.failedAt < this.retryAfterFailureMs) throw new Error('the identity provider failed moments ago');
    const res = await fetch(url, init).catch((err: unknown) => {
      throw this.failed(err);
    });
    if (!res.ok) throw this.failed(new Error(`${new URL(url).pathname} answered ${res.status}`));
    return res;
  };

  private failed(err: unknown): unknown {
    this.failedAt = performance.now();
    this.log?.warn(
      {
        issuer: this.options.issuer,
        reason: err instanceof Error ? err.message : String(err),
        retryInSeconds: this.retryAfterFailureMs / 1000,
      },
      'the OpenID Connect provider did not answer: bearer tokens are refused until it does',
    );
    return err;
  }
}

function claim(payload: JWTPayload, name: string): string | null {
  const v = payload[name];
  return typeof v === 'string' && v.trim() ? v.trim().slice(0, 200) : null;
}
