import { AppError } from '../../errors.js';
import { readableAccount, requireAccountAccess, requireAdmin, requireScope } from '../access.js';
import { API_KEY_SCOPES, type Principal } from '../principal.js';

/** Who may see, make and revoke API keys. The services call these before acting. */
export const apiKeyPolicy = {
  /** An account's keys (never their secrets): the keys scope; another account's for analysts and admins. */
  list(principal: Principal, accountId: string): void {
    requireScope(principal, 'keys');
    requireAccountAccess(principal, accountId);
  },
  /** Batched reads (a loader's): the keys scope; returns the account they are limited to (null: every one, for analysts and admins). */
  listMany(principal: Principal): string | null {
    requireScope(principal, 'keys');
    return readableAccount(principal);
  },
  /**
   * A new key: the keys scope, for the caller's own account (an admin's for any); and a key cannot
   * mint one with a scope it lacks itself. Returns the scopes the key gets: those asked for, or by
   * default the caller's own.
   */
  create(principal: Principal, accountId: string, scopes: readonly string[] | null | undefined): string[] {
    requireScope(principal, 'keys');
    if (accountId !== principal.accountId) requireAdmin(principal, 'make keys for another account');
    const wanted = scopes?.length ? [...new Set(scopes)] : API_KEY_SCOPES.filter((s) => principal.scopes.has(s));
    const beyond = wanted.filter((s) => (API_KEY_SCOPES as readonly string[]).includes(s) && !principal.scopes.has(s));
    if (beyond.length) requireScope(principal, beyond[0]);
    return wanted;
  },
  /**
   * Revoking: the keys scope. Returns the account whose keys the caller may revoke (null: any, for
   * admins); another account's key is then NOT_FOUND, as an unknown one.
   */
  revoke(principal: Principal): string | null {
    requireScope(principal, 'keys');
    return principal.roles.has('admin') ? null : principal.accountId;
  },
};

/** The same refusal for a key that is not the caller's as for one that does not exist. */
export const noSuchKey = () => new AppError('NOT_FOUND', 'No such API key.');
