/** An answer as a client sees it: the status and the parsed body, or `lost` when the connection died first. */
export type Reply<T = unknown> = { status: number; json: T } | { lost: string };

/**
 * Sends one JSON request to a gateway started as a process. A refused connection or a reset
 * mid-answer is `lost` (the process is gone: JSON from a live gateway always parses), with the
 * socket's code, so a test can tell a crash from an answer.
 */
export async function send<T = unknown>(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<Reply<T>> {
  try {
    const res = await fetch(base + path, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: (text ? JSON.parse(text) : null) as T };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    return { lost: `${e.message}${e.cause ? ` (${e.cause.code ?? e.cause.message})` : ''}` };
  }
}
