import { isAnalyst, readableAccount, requireAccountAccess, requireAdmin, requireAnalyst, requireScope } from '../access.js';
import type { Principal } from '../principal.js';

/**
 * Who may do what with accounts. The services call these before acting; the doors only translate
 * (their scope annotations document the same rules, and guard a second time).
 */
export const accountPolicy = {
  /** One account: its holder with the read scope; analysts and admins any account's. */
  read(principal: Principal, accountId: string): void {
    requireScope(principal, 'read');
    requireAccountAccess(principal, accountId);
  },
  /** Batched reads (a loader's): the read scope; returns the account they are limited to (null: every one, for analysts and admins). */
  readMany(principal: Principal): string | null {
    requireScope(principal, 'read');
    return readableAccount(principal);
  },
  /** Every account: analysts and admins, with the read scope. */
  list(principal: Principal): void {
    requireScope(principal, 'read');
    requireAnalyst(principal);
  },
  /** Creating accounts, setting and ending memberships: admins (the operator's command line). */
  administer(principal: Principal, what: string): void {
    requireAdmin(principal, what);
  },
  /** In trusted-documents-only mode, analysts and admins may still send documents of their own. */
  mayRunUntrustedDocuments(principal: Principal): boolean {
    return isAnalyst(principal);
  },
};
