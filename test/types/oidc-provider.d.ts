/** Just what the tests use of oidc-provider (panva/node-oidc-provider), which ships no types. */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface ClientMetadata {
    client_id: string;
    application_type?: 'web' | 'native';
    token_endpoint_auth_method?: string;
    redirect_uris: string[];
    post_logout_redirect_uris?: string[];
    grant_types?: string[];
    response_types?: string[];
  }

  export interface Configuration {
    clients?: ClientMetadata[];
    findAccount?: (
      ctx: unknown,
      sub: string,
    ) =>
      | { accountId: string; claims: () => Record<string, unknown> }
      | Promise<{ accountId: string; claims: () => Record<string, unknown> }>;
    claims?: Record<string, string[]>;
    conformIdTokenClaims?: boolean;
    clientBasedCORS?: (ctx: unknown, origin: string, client: unknown) => boolean;
    features?: Record<string, { enabled: boolean }>;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }
}
