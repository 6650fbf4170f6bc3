import { AppError } from '../errors.js';
import { type ApiKeyService, type Principal, unauthenticated } from './api-keys/api-key.service.js';

/** Reads `Authorization: Bearer <key>`; every failure is the same 401. */
export async function authenticate(apiKeys: ApiKeyService, header: string | undefined): Promise<Principal> {
  if (!header) throw new AppError('UNAUTHENTICATED');
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw unauthenticated();
  return apiKeys.authenticate(m[1]);
}

/** What both doors hand to the services for one request. */
export interface RequestContext {
  requestId: string;
  /** Resolves the caller once per request; rejects with 401 UNAUTHENTICATED. */
  principal(): Promise<Principal>;
}

export function requestContext(apiKeys: ApiKeyService, header: string | undefined, requestId: string): RequestContext {
  let memo: Promise<Principal> | undefined;
  return {
    requestId,
    principal: () => (memo ??= authenticate(apiKeys, header)),
  };
}
