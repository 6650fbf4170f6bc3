/**
 * The page's only way to the gateway: GraphQL (and the few REST files it offers for download),
 * with the session it signed in to. An API key never enters the page, nor does an OpenID Connect
 * token stay in it: either sign-in is exchanged for a session cookie (HttpOnly, so scripts cannot
 * read it), and changes carry the session's CSRF token.
 */

/** A failure in the contract's words: its code and message, never a stack or raw JSON. */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The words to show for a failure: the contract's message, else a plain sentence. */
export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  return 'Something went wrong while talking to the gateway. Try again.';
}

/** A GraphQL operation whose result and variables are typed. */
export interface Operation<Result, Variables = Record<string, never>> {
  query: string;
  /** Never set: carries the types. */
  readonly _types?: [Result, Variables];
}

const op = <R, V = Record<string, never>>(query: string): Operation<R, V> => ({ query });

let csrfToken: string | null = null;

/** The session's CSRF token, which every request of the page carries; null when signed out. */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

function authHeaders(): Record<string, string> {
  return csrfToken ? { 'x-csrf-token': csrfToken } : {};
}

/** Reads an answer: the JSON body, or an ApiError with the contract's code and message. */
async function answer<T>(res: Response): Promise<T> {
  const type = res.headers.get('content-type') ?? '';
  const body = type.includes('json') ? await res.json().catch(() => null) : null;
  if (!res.ok) {
    const error = body?.error ?? body?.errors?.[0];
    throw new ApiError(error?.code ?? error?.extensions?.code ?? 'HTTP_' + res.status, error?.message ?? `The gateway answered ${res.status}.`);
  }
  return body as T;
}

export async function gql<R, V>(operation: Operation<R, V>, variables?: V): Promise<R> {
  const res = await fetch('/graphql', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', ...authHeaders() },
    body: JSON.stringify({ query: operation.query, variables }),
  });
  const body = await answer<{ data?: R; errors?: { message: string; extensions?: { code?: string } }[] }>(res);
  if (body.errors?.length) {
    const [first] = body.errors;
    throw new ApiError(first.extensions?.code ?? 'ERROR', first.message);
  }
  return body.data as R;
}

/** Fetches a file the gateway serves to signed-in callers and hands it to the browser as a download. */
export async function download(path: string, filename: string): Promise<void> {
  const res = await fetch(path, { credentials: 'same-origin', headers: authHeaders() });
  if (!res.ok) await answer(res);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A session as the gateway answers it. */
export interface Session {
  csrfToken: string;
  expiresAt: string;
  account: { id: string; name: string };
}

const post = (path: string, body: unknown, csrf?: string | null) =>
  fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', ...(csrf ? { 'x-csrf-token': csrf } : {}) },
    body: JSON.stringify(body),
  });

/**
 * The page's session endpoints. A sign-in ends the browser's current session, so it carries that
 * session's CSRF token when there is one.
 */
export const session = {
  /** Which account a login link would sign in, without spending it, and the browser's current session. */
  async peek(token: string): Promise<{ account: { id: string; name: string }; session: Session | null }> {
    return answer(await post('/account/api/login-link', { token }));
  },
  async exchange(token: string, csrf: string | null): Promise<Session> {
    return answer(await post('/account/api/session', { token }, csrf));
  },
  async exchangeIdToken(idToken: string, nonceVerifier: string, csrf: string | null): Promise<Session> {
    return answer(await post('/account/api/session/oidc', { idToken, nonceVerifier }, csrf));
  },
  async resume(): Promise<Session | null> {
    const res = await fetch('/account/api/session', { credentials: 'same-origin' });
    // 204: not signed in.
    return res.status === 204 ? null : answer(res);
  },
  async logout(): Promise<void> {
    await fetch('/account/api/logout', { method: 'POST', credentials: 'same-origin', headers: authHeaders() });
  },
};

export interface PageConfig {
  oidc: { issuer: string; clientId: string } | null;
  loginLinks: boolean;
}

export async function pageConfig(): Promise<PageConfig> {
  return answer(await fetch('/account/config.json'));
}

// ---- Operations -------------------------------------------------------------------------------

export interface Me {
  id: string;
  name: string;
  email: string | null;
  membership: { status: string; periodEnd: string; active: boolean } | null;
  credits: { available: number; held: number };
}
export const ME = op<{ me: Me }>(`{ me { id name email membership { status periodEnd active } credits { available held } } }`);

export interface UsageBucket {
  period: string;
  key: string;
  credits: number;
  tasks: number;
}
export const USAGE = op<{ creditUsage: UsageBucket[] }, { from: string; to: string }>(
  `query($from: DateTime!, $to: DateTime!) { creditUsage(from: $from, to: $to, groupBy: DAY, by: OPERATION) { period key credits tasks } }`,
);

export interface CreditEntry {
  id: string;
  kind: string;
  amount: number;
  availableDelta: number;
  heldDelta: number;
  jobId: string | null;
  reason: string | null;
  createdAt: string;
}
/** One row of the history per task: a task with its entries, or an entry of no task (a grant, an adjustment, an expiry). */
export interface HistoryRow {
  id: string;
  createdAt: string;
  job: {
    id: string;
    operation: string;
    status: string;
    creditsCharged: number;
    creditsHeld: number;
    error: { code: string; message: string } | null;
    creditEntries: CreditEntry[];
  } | null;
  entry: CreditEntry | null;
}
const ENTRY_FIELDS = 'id kind amount availableDelta heldDelta jobId reason createdAt';
export const HISTORY_BY_TASK = op<
  { creditHistoryByTask: { edges: { cursor: string; node: HistoryRow }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } },
  { first: number; after: string | null }
>(
  `query($first: Int, $after: String) { creditHistoryByTask(first: $first, after: $after) {
     edges { cursor node { id createdAt entry { ${ENTRY_FIELDS} }
       job { id operation status creditsCharged creditsHeld error { code message } creditEntries { ${ENTRY_FIELDS} } } } }
     pageInfo { hasNextPage endCursor } } }`,
);

export interface ApiKey {
  id: string;
  name: string;
  last4: string;
  scopes: string[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}
const KEY_FIELDS = 'id name last4 scopes createdAt lastUsedAt revokedAt';
export const API_KEYS = op<{ apiKeys: ApiKey[] }>(`{ apiKeys { ${KEY_FIELDS} } }`);
export const CREATE_KEY = op<{ createApiKey: { key: string; apiKey: ApiKey } }, { name: string; scopes: string[] }>(
  `mutation($name: String, $scopes: [String!]) { createApiKey(name: $name, scopes: $scopes) { key apiKey { ${KEY_FIELDS} } } }`,
);
export const REVOKE_KEY = op<{ revokeApiKey: ApiKey }, { id: string }>(`mutation($id: ID!) { revokeApiKey(id: $id) { ${KEY_FIELDS} } }`);

export interface Format {
  url: string;
  kind: string;
  container: string | null;
  width: number | null;
  height: number | null;
  hasAudio: boolean | null;
  durationSeconds: number | null;
}
export interface ParseResult {
  id: string;
  media: Format & { audio: Format | null };
  alternatives: Format[];
  itemsTotal: number;
  cover: { url: string } | null;
  metadata: { title: string | null; author: string | null; durationSeconds: number | null; site: string | null };
  credits: { charged: number; balance: number };
}
const FORMAT = 'url kind container width height hasAudio durationSeconds';
export const PARSE = op<{ parse: ParseResult }, { input: { url: string; mode: string; quality: string } }>(
  `mutation($input: ParseInput!) { parse(input: $input) { id media { ${FORMAT} audio { ${FORMAT} } } alternatives { ${FORMAT} } itemsTotal
     cover { url } metadata { title author durationSeconds site } credits { charged balance } } }`,
);

export interface Transcription {
  id: string;
  language: string | null;
  durationSeconds: number | null;
  text: string;
  segments: { index: number; start: number; end: number; text: string }[];
  credits: { charged: number; balance: number };
}
export const TRANSCRIBE = op<{ transcribe: Transcription }, { input: { mediaUrl: string; language?: string } }>(
  `mutation($input: TranscribeInput!) { transcribe(input: $input) { id language durationSeconds text segments { index start end text } credits { charged balance } } }`,
);
