import { UserManager, WebStorageStateStore } from 'oidc-client-ts';
import type { PageConfig } from './api.js';

/**
 * OpenID Connect sign-in: Authorization Code with PKCE, in the browser (oidc-client-ts). The ID
 * token is what the gateway verifies (its audience is this page's client id); it lives in session
 * storage only, never in a cookie the gateway would have to trust.
 */
export function userManager(config: NonNullable<PageConfig['oidc']>): UserManager {
  const redirect = `${location.origin}/account/`;
  return new UserManager({
    authority: config.issuer,
    client_id: config.clientId,
    redirect_uri: redirect,
    post_logout_redirect_uri: redirect,
    response_type: 'code',
    scope: 'openid profile email',
    userStore: new WebStorageStateStore({ store: window.sessionStorage }),
    automaticSilentRenew: false,
  });
}

/** After the provider sent the browser back with ?code=…: finishes the exchange and cleans the URL. */
export async function completeRedirect(manager: UserManager): Promise<string | null> {
  const params = new URLSearchParams(location.search);
  if (!params.has('code') || !params.has('state')) return null;
  const user = await manager.signinRedirectCallback();
  history.replaceState(null, '', '/account/');
  return user.id_token ?? null;
}

/** A token from an earlier sign-in in this tab, while it is still valid. */
export async function storedToken(manager: UserManager): Promise<string | null> {
  const user = await manager.getUser();
  return user && !user.expired ? (user.id_token ?? null) : null;
}
