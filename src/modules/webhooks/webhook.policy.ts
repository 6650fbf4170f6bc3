import { isAnalyst, readableAccount, requireScope } from '../access.js';
import type { Principal } from '../principal.js';

/** Who may read the webhook signing secret and a job's delivery attempts. */
export const webhookPolicy = {
  /** The signing secret, read or replaced: the keys scope (it is a credential), the caller's own account. */
  secret(principal: Principal): void {
    requireScope(principal, 'keys');
  },
  /** Batched reads of attempts (a loader's): the read scope; returns the account they are limited to (null: every one, for analysts and admins). */
  readMany(principal: Principal): string | null {
    requireScope(principal, 'read');
    return readableAccount(principal);
  },
  /**
   * Whether the caller sees a job's delivery attempts: with the read scope, for its own account's
   * jobs (analysts: any). Without it the attempts are left out, the rest of the job shown (a
   * transcribe-only key's 202 lists none).
   */
  seesAttempts(principal: Principal, jobAccountId: string): boolean {
    return principal.scopes.has('read') && (jobAccountId === principal.accountId || isAnalyst(principal));
  },
};
