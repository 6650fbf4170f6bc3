import { type Client, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import type { Harness } from './harness.js';

/** graphql-ws clients and subscriptions as a test follows them: what came, how it ended, how the socket closed. */

export const wsUrl = (h: { url: string }) => `${h.url.replace('http', 'ws')}/graphql`;

/** A pushed job, as `JOB_UPDATED` selects it. */
export interface JobPush {
  status: string;
  progress: number;
}

export const JOB_UPDATED = `subscription($id: ID!) { jobUpdated(id: $id) { status progress } }`;

/** A graphql-ws client whose socket's close code is kept; it connects with `connectionParams` (a key, or a CSRF token). */
export interface TestClient {
  client: Client;
  /** The close codes seen, in order (a client that reconnects is not made here: retryAttempts 0). */
  closes: number[];
  dispose(): Promise<void>;
}

export function testClient(
  h: { url: string },
  connectionParams: Record<string, unknown>,
  headers: Record<string, string> = {},
): TestClient {
  const closes: number[] = [];
  // A WebSocket that sends the upgrade request's headers (a session's cookie).
  class WithHeaders extends WebSocket {
    constructor(address: string | URL, protocols?: string | string[]) {
      super(address, protocols, { headers });
    }
  }
  const client = createClient({
    url: wsUrl(h),
    webSocketImpl: WithHeaders,
    connectionParams,
    retryAttempts: 0,
    lazy: false,
    // The close is kept in `closes`; graphql-ws would also print it on the console.
    onNonLazyError: () => undefined,
    on: { closed: (event) => void closes.push((event as { code: number }).code) },
  });
  return { client, closes, dispose: () => Promise.resolve(client.dispose()) };
}

export const keyClient = (h: Harness, key: string) => testClient(h, { Authorization: `Bearer ${key}` });

/** One subscription: its pushes as they come, and how it ended (complete, errors, or the socket's close). */
export interface Followed<T> {
  pushes: T[];
  /** Set once it ended: `complete`, the GraphQL errors' codes, or `closed` with the socket's close code. */
  end: { complete: true } | { codes: string[]; messages: string[] } | { closed: number } | null;
  stop(): void;
}

export function follow<T = JobPush>(c: TestClient, query: string, variables: Record<string, unknown>, pick = 'jobUpdated'): Followed<T> {
  const followed: Followed<T> = { pushes: [], end: null, stop: () => undefined };
  followed.stop = c.client.subscribe(
    { query, variables },
    {
      next: (msg) => {
        if (msg.errors) {
          followed.end = {
            codes: msg.errors.map((e) => String(e.extensions?.code)),
            messages: msg.errors.map((e) => e.message),
          };
        } else followed.pushes.push((msg.data as Record<string, T>)[pick]);
      },
      error: (e) => {
        followed.end = Array.isArray(e)
          ? { codes: e.map((x) => String(x.extensions?.code)), messages: e.map((x) => String(x.message)) }
          : { closed: (e as { code: number }).code };
      },
      complete: () => {
        followed.end ??= { complete: true };
      },
    },
  );
  return followed;
}

/** The value of a metric (summed over its labels) in the text /metrics serves. */
export function metricValue(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`).exec(line);
    if (m) sum += Number(m[1]);
  }
  return sum;
}
