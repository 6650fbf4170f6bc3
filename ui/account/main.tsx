import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { UserManager } from 'oidc-client-ts';
import { ApiError, ME, gql, messageOf, pageConfig, session, setCsrfToken, type Me, type PageConfig, type Session } from './api.js';
import { KeysSection } from './keys.js';
import { completeRedirect, startSignIn, userManager } from './oidc.js';
import { OverviewSection } from './overview.js';
import { TryItSection } from './try-it.js';
import { UsageSection } from './usage.js';
import './app.css';

const LINK_SPENT = 'This sign-in link has been used or has expired. Ask for a new one.';

type Account = { id: string; name: string };
type State =
  | { phase: 'loading' }
  | { phase: 'signed-out'; config: PageConfig | null; error: string | null }
  | { phase: 'switch'; current: Session; next: Account; token: string }
  | { phase: 'signed-in'; me: Me; notice: string | null };

/** Where signing in leads: a session, or the question whether to leave the current one for a link's account. */
type Outcome = { session: Session; notice?: string } | { current: Session; next: Account; token: string } | null;

/** Signs in from what the URL and the browser hold: a login link, an OIDC redirect, or the session cookie. */
async function signIn(manager: UserManager | null): Promise<Outcome> {
  const login = /^#login=([A-Za-z0-9_-]+)$/.exec(location.hash)?.[1];
  // The link is single-use: take it out of the address bar and history at once.
  if (login) history.replaceState(null, '', '/account/');
  // A sign-in ends the browser's current session, so it carries that session's CSRF token.
  if (login) {
    const link = await session.peek(login).catch(async (err: unknown) => {
      if (!(err instanceof ApiError && err.code === 'UNAUTHENTICATED')) throw err;
      // A spent link: stay signed in if the browser is, else say why not.
      const current = await session.resume();
      if (!current) throw err;
      return { account: null, session: current };
    });
    const current = link.session;
    if (!link.account) return { session: current!, notice: LINK_SPENT };
    if (!current) return { session: await session.exchange(login, null) };
    if (link.account.id === current.account.id) return { session: await session.exchange(login, current.csrfToken) };
    return { current, next: link.account, token: login };
  }
  const redirect = manager ? await completeRedirect(manager) : null;
  const current = await session.resume();
  if (redirect) return { session: await session.exchangeIdToken(redirect.idToken, redirect.nonceVerifier, current?.csrfToken ?? null) };
  return current ? { session: current } : null;
}

function App() {
  const [state, setState] = useState<State>({ phase: 'loading' });
  const [manager, setManager] = useState<UserManager | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);

  const enter = async (s: Session, notice: string | null = null) => {
    setCsrfToken(s.csrfToken);
    const { me } = await gql(ME);
    setState({ phase: 'signed-in', me, notice });
  };
  const signedOut = (config: PageConfig | null, err: unknown, link: boolean) => {
    setCsrfToken(null);
    setState({
      phase: 'signed-out',
      config,
      error: err == null ? null : link && err instanceof ApiError && err.code === 'UNAUTHENTICATED' ? LINK_SPENT : messageOf(err),
    });
  };
  const start = async () => {
    let config: PageConfig | null = null;
    const link = location.hash.startsWith('#login=');
    try {
      config = await pageConfig();
      const m = config.oidc ? userManager(config.oidc) : null;
      setManager(m);
      const outcome = await signIn(m);
      if (!outcome) return signedOut(config, null, link);
      if ('next' in outcome) return setState({ phase: 'switch', ...outcome });
      await enter(outcome.session, outcome.notice ?? null);
    } catch (err) {
      signedOut(config, err, link);
    }
  };
  useEffect(() => {
    void start();
    // A login link opened in a tab already on this page changes only the fragment.
    const onHash = () => void (location.hash.startsWith('#login=') && start());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
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
          <button type="button" onClick={() => void startSignIn(manager)}>
            Sign in with {new URL(state.config.oidc.issuer).host}
          </button>
        )}
        <p>
          Without an identity provider, ask your operator for a one-time sign-in link (<code>mediagate account login-link ACCOUNT_ID</code>
          ). It works once and for a few minutes.
        </p>
      </section>
    );
  }
  if (state.phase === 'switch') {
    const { current, next, token } = state;
    // Staying leaves the link unspent; leaving ends the current session on the server.
    const choose = async (leave: boolean) => {
      try {
        await enter(leave ? await session.exchange(token, current.csrfToken) : current);
      } catch (err) {
        // A refused exchange changed nothing: the current session goes on.
        await enter(current, err instanceof ApiError && err.code === 'UNAUTHENTICATED' ? LINK_SPENT : messageOf(err)).catch((e: unknown) =>
          signedOut(null, e, false),
        );
      }
    };
    return (
      <section class="card sign-in" aria-labelledby="switch-title">
        <h1 id="switch-title" tabIndex={-1} ref={heading}>
          Switch accounts?
        </h1>
        <p>
          You are signed in as {current.account.name}. Sign in as {next.name} instead?
        </p>
        <div class="row">
          <button type="button" onClick={() => void choose(true)}>
            Sign in as {next.name}
          </button>
          <button type="button" class="secondary" onClick={() => void choose(false)}>
            Stay signed in as {current.account.name}
          </button>
        </div>
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
            await session.logout();
            setCsrfToken(null);
            setState({ phase: 'signed-out', config: null, error: null });
            void start();
          }}
        >
          Sign out
        </button>
      </header>
      {state.notice && (
        <p role="alert" class="error card">
          {state.notice}
        </p>
      )}
      <OverviewSection me={state.me} />
      <UsageSection />
      <KeysSection />
      <TryItSection onCharged={() => void refreshMe()} />
    </>
  );
}

render(<App />, document.getElementById('app')!);
