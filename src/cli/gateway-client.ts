/**
 * The HTTP side of the client commands: a connection to a running gateway (its address and an API
 * key), one call helper, and the error the commands report. The key goes only into the
 * Authorization header; nothing here prints it.
 */

/** Where a gateway answers when neither --api nor MEDIAGATE_API_URL says. */
export const DEFAULT_API = 'http://localhost:4000';

/** A failure, reported as `error CODE: message`; `body` is the error JSON printed with --json. */
export class ClientError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly exitCode = 1,
    readonly body: unknown = { error: { code, message } },
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
  }
}

/** Where to call and with which key. */
export interface Connection {
  api: string;
  key: string;
  signal: AbortSignal;
}

/** `--api` and `--key`, as commander hands them over. */
export interface ConnectionOptions {
  api?: string;
  key?: string;
}

/** The connection the options and the environment name; no key is exit 2, before any request. */
export function connect(o: ConnectionOptions, signal: AbortSignal): Connection {
  const key = o.key || process.env.MEDIAGATE_API_KEY;
  if (!key) throw new ClientError('MISSING_API_KEY', 'no API key: pass --key KEY or set MEDIAGATE_API_KEY', 2);
  const api = (o.api || process.env.MEDIAGATE_API_URL || DEFAULT_API).replace(/\/+$/, '');
  let url: URL | null = null;
  try {
    url = new URL(api);
  } catch {
    // reported below
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new ClientError('INVALID_INPUT', '--api (or MEDIAGATE_API_URL) must be an http(s) URL', 2);
  }
  // fetch refuses such URLs, and whatever is in them would be printed with the address.
  if (url.username || url.password)
    throw new ClientError('INVALID_INPUT', '--api (or MEDIAGATE_API_URL) must not hold a user or password', 2);
  return { api, key, signal };
}

/** One call to the gateway; any non-2xx answer becomes a ClientError carrying the contract's error body. */
export async function call(
  c: Connection,
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Response> {
  // A Location header is a path on the gateway; resolve it as a browser would.
  const url = /^https?:\/\//i.test(path) ? path : path.startsWith('/') ? new URL(path, `${c.api}/`).toString() : `${c.api}/${path}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${c.key}`,
        ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...opts.headers,
      },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: c.signal,
    });
  } catch (err) {
    if (c.signal.aborted) throw err;
    throw new ClientError('UNREACHABLE', `cannot reach ${c.api}`);
  }
  if (res.ok) return res;
  const text = await res.text().catch(() => '');
  let body: { error?: { code?: unknown; message?: unknown } } | null = null;
  try {
    body = JSON.parse(text);
  } catch {
    // not the gateway's error body
  }
  const retryAfter = Number(res.headers.get('retry-after'));
  const wait = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null;
  if (body?.error && typeof body.error.code === 'string') {
    throw new ClientError(body.error.code, String(body.error.message ?? ''), 1, body, wait);
  }
  throw new ClientError(`HTTP_${res.status}`, `${c.api} answered ${res.status} ${res.statusText}`.trim(), 1, undefined, wait);
}

/** The body as JSON; an answer that is not JSON is not from the gateway. */
export async function json<T>(res: Response): Promise<T> {
  const text = await res.text();
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ClientError('BAD_RESPONSE', `${res.url} answered ${res.status} with something that is not JSON`);
  }
}
