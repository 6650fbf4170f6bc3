import { UserManager, WebStorageStateStore } from 'oidc-client-ts';
import type { PageConfig } from './api.js';

/**
 * OpenID Connect sign-in: Authorization Code with PKCE, in the browser (oidc-client-ts). The ID
 * token is what the gateway verifies (its audience is this page's client id); the page exchanges it
 * once for a session cookie and keeps nothing of it.
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
    stateStore: new WebStorageStateStore({ store: window.sessionStorage }),
    automaticSilentRenew: false,
  });
}

const base64url = (bytes: ArrayBuffer | Uint8Array) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

/**
 * Sends the browser to the provider. The nonce is the SHA-256 of a secret (the nonce verifier) that
 * only this tab keeps, in the sign-in's state: the gateway opens a session for the ID token only with
 * that secret, so a token that leaked from elsewhere signs nobody in.
 */
export async function startSignIn(manager: UserManager): Promise<void> {
  const nonceVerifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const nonce = base64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(nonceVerifier)));
  await manager.signinRedirect({ nonce, state: { nonceVerifier } });
}

/** After the provider sent the browser back with ?code=…: the ID token and its nonce verifier, and a clean URL. */
export async function completeRedirect(manager: UserManager): Promise<{ idToken: string; nonceVerifier: string } | null> {
  const params = new URLSearchParams(location.search);
  if (!params.has('code') || !params.has('state')) return null;
  try {
    const user = await manager.signinRedirectCallback();
    const nonceVerifier = (user.state as { nonceVerifier?: unknown } | undefined)?.nonceVerifier;
    return user.id_token && typeof nonceVerifier === 'string' ? { idToken: user.id_token, nonceVerifier } : null;
  } finally {
    history.replaceState(null, '', '/account/');
    // The session cookie is the credential from here on: no token stays in the browser.
    await manager.removeUser();
  }
}
