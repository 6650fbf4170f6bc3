import { AsyncLocalStorage } from 'node:async_hooks';

/** What is known of the request a piece of work serves, wherever it runs in that request's async chain. */
interface RequestScope {
  requestId: string;
}

const scope = new AsyncLocalStorage<RequestScope>();

/** Binds the rest of the current async chain (a request's handlers) to its request id. */
export function enterRequest(requestId: string): void {
  scope.enterWith({ requestId });
}

/** The id of the request the caller is serving, or null outside one (a queue worker). */
export function currentRequestId(): string | null {
  return scope.getStore()?.requestId ?? null;
}
