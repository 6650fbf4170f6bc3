import { readableAccount, requireScope } from '../access.js';
import type { Principal } from '../principal.js';

/**
 * Who may read and cancel jobs. A job is only ever looked up within the caller's account, so
 * another account's job is NOT_FOUND, as an unknown one (analysts read across accounts through
 * their own fields: `accounts`, a job's `account`).
 */
export const jobPolicy = {
  /** Reading jobs (one, a list, a finished transcription's subtitles): the read scope. */
  read(principal: Principal): void {
    requireScope(principal, 'read');
  },
  /** Batched reads (a loader's): the read scope; returns the account they are limited to (null: every one, for analysts and admins). */
  readMany(principal: Principal): string | null {
    requireScope(principal, 'read');
    return readableAccount(principal);
  },
  /** A job the caller just started (a 202's body): its own, no read scope needed. */
  readStarted(_principal: Principal): void {},
  /** Cancelling changes what the transcribe scope started, so it needs that scope. */
  cancel(principal: Principal): void {
    requireScope(principal, 'transcribe');
  },
};
