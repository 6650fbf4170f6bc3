/** The session cookie's name and whether it is Secure, from where browsers reach the gateway. */
export interface SessionCookie {
  name: string;
  secure: boolean;
  /** Said once at start when the cookie is weaker than `__Host-`, or browsers will refuse it. */
  warning: string | null;
}

/** The name browsers keep only when set Secure, with Path=/ and no Domain, by this very host. */
export const HOST_SESSION_COOKIE = '__Host-mg_session';
/** The development fallback over plain http on another host than this machine. */
export const PLAIN_SESSION_COOKIE = 'mg_session';

/** Hosts browsers treat as secure contexts over plain http (they keep Secure cookies from them). */
const LOOPBACK = /^(?:localhost|.+\.localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/**
 * `__Host-mg_session` (Secure, Path=/, no Domain), so neither a sibling subdomain nor a plain-http
 * hop can plant a session: always in production, and elsewhere whenever PUBLIC_URL is https or this
 * machine. Only outside production with a plain-http PUBLIC_URL on another host (a test box on the
 * LAN), where browsers would drop a Secure cookie, is it `mg_session` without Secure, with a warning.
 */
export function sessionCookie(publicUrl: string, production: boolean): SessionCookie {
  const url = new URL(publicUrl);
  const plainHttp = url.protocol === 'http:' && !LOOPBACK.test(url.hostname);
  if (plainHttp && !production) {
    return {
      name: PLAIN_SESSION_COOKIE,
      secure: false,
      warning: `PUBLIC_URL is plain http on ${url.hostname}: outside production the session cookie is ${PLAIN_SESSION_COOKIE} without Secure, which another site on the network could plant; use https`,
    };
  }
  return {
    name: HOST_SESSION_COOKIE,
    secure: true,
    warning: plainHttp
      ? `PUBLIC_URL is plain http on ${url.hostname}: browsers keep the session cookie (${HOST_SESSION_COOKIE}, Secure) only over https, so account-area sign-in needs https`
      : null,
  };
}
