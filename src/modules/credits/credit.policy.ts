import { accountToRead, readableAccount, requireAdmin, requireScope } from '../access.js';
import type { Principal } from '../principal.js';

/** Who may read the ledger and who may add to it. */
export const creditPolicy = {
  /**
   * Reading credit history, usage and balances: the read scope. Returns the account the read is
   * about: the caller's own by default, another only for analysts and admins (FORBIDDEN otherwise).
   */
  read(principal: Principal, accountId?: string | null): string {
    requireScope(principal, 'read');
    return accountToRead(principal, accountId);
  },
  /** Batched reads (a loader's): the read scope; returns the account they are limited to (null: every one, for analysts and admins). */
  readMany(principal: Principal): string | null {
    requireScope(principal, 'read');
    return readableAccount(principal);
  },
  /** Granting credits: admins (the operator's command line). */
  grant(principal: Principal): void {
    requireAdmin(principal, 'grant credits');
  },
};
