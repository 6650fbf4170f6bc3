import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { UserManager } from 'oidc-client-ts';
import { ApiError, ME, gql, messageOf, pageConfig, session, setCredential, type Me, type PageConfig } from './api.js';
import { KeysSection } from './keys.js';
import { completeRedirect, storedToken, userManager } from './oidc.js';
import { OverviewSection } from './overview.js';
import { TryItSection } from './try-it.js';
import { UsageSection } from './usage.js';
import './app.css';

type State =
  | { phase: 'loading' }
  | { phase: 'signed-out'; config: PageConfig | null; error: string | null }
  | { phase: 'signed-in'; me: Me; signOut: () => Promise<void> };

/** Signs in from what the URL and the browser hold: a login link, a session cookie, or an OIDC redirect. */
async function signIn(config: PageConfig, manager: UserManager | null): Promise<(() => Promise<void>) | null> {
  const login = /^#login=([A-Za-z0-9_-]+)$/.exec(location.hash)?.[1];
  if (login) {
    // The link is single-use: take it out of the address bar and history at once.
    history.replaceState(null, '', '/account/');
    const s = await session.exchange(login);
    setCredential({ kind: 'session', csrfToken: s.csrfToken });
    return session.logout;
  }
  const resumed = await session.resume();
  if (resumed) {
    setCredential({ kind: 'session', csrfToken: resumed.csrfToken });
    return session.logout;
  }
  if (manager) {
    const token = (await completeRedirect(manager)) ?? (await storedToken(manager));
    if (token) {
      setCredential({ kind: 'oidc', token });
      return () => manager.removeUser();
    }
  }
  void config;
  return null;
}

function App() {
  const [state, setState] = useState<State>({ phase: 'loading' });
  const [manager, setManager] = useState<UserManager | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);

  const start = async () => {
    let config: PageConfig | null = null;
    try {
      config = await pageConfig();
      const m = config.oidc ? userManager(config.oidc) : null;
      setManager(m);
      const signOut = await signIn(config, m);
      if (!signOut) return setState({ phase: 'signed-out', config, error: null });
      const { me } = await gql(ME);
      setState({ phase: 'signed-in', me, signOut });
    } catch (err) {
      setCredential(null);
      setState({ phase: 'signed-out', config, error: err instanceof ApiError && err.code === 'UNAUTHENTICATED' ? 'This sign-in link has been used or has expired. Ask for a new one.' : messageOf(err) });
    }
  };
  useEffect(() => void start(), []);
  useEffect(() => heading.current?.focus(), [state.phase]);

  if (state.phase === 'loading') return <p>Loading…</p>;
  if (state.phase === 'signed-out') {
    return (
      <section class="card sign-in" aria-labelledby="sign-in-title">
        <h1 id="sign-in-title" tabIndex={-1} ref={heading}>
          Sign in to your mediagate account
        </h1>
        {state.error && (
          <p role="alert" class="error">
            {state.error}
          </p>
        )}
        {state.config?.oidc && manager && (
          <button type="button" onClick={() => void manager.signinRedirect()}>
            Sign in with {new URL(state.config.oidc.issuer).host}
          </button>
        )}
        <p>
          Without an identity provider, ask your operator for a one-time sign-in link (<code>mediagate account login-link ACCOUNT_ID</code>). It
          works once and for a few minutes.
        </p>
      </section>
    );
  }
  const refreshMe = async () => {
    const { me } = await gql(ME);
    setState({ ...state, me });
  };
  return (
    <>
      <header class="top">
        <h1 tabIndex={-1} ref={heading}>
          {state.me.name}
        </h1>
        <nav aria-label="Sections">
          <a href="#overview">Overview</a> <a href="#usage">Usage</a> <a href="#keys">API Keys</a> <a href="#try">Try it</a>
        </nav>
        <button
          type="button"
          class="secondary"
          onClick={async () => {
            await state.signOut();
            setCredential(null);
            setState({ phase: 'signed-out', config: null, error: null });
            void start();
          }}
        >
          Sign out
        </button>
      </header>
      <OverviewSection me={state.me} />
      <UsageSection />
      <KeysSection />
      <TryItSection onCharged={() => void refreshMe()} />
    </>
  );
}

render(<App />, document.getElementById('app')!);
