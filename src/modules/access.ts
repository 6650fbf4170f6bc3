import { AppError } from '../errors.js';
import type { Principal } from './principal.js';

/** The work operations (parse, transcribe, jobs) need an active membership. */
export function requireMembership(principal: Principal): void {
  if (!principal.isMember) throw new AppError('MEMBERSHIP_REQUIRED');
}

/** A key created with fewer scopes may not do the rest; nor may a Bearer OpenID Connect token make credentials. */
export function requireScope(principal: Principal, scope: string): void {
  if (principal.scopes.has(scope)) return;
  if (principal.via === 'oidc')
    throw new AppError(
      'FORBIDDEN',
      `An OpenID Connect token lacks the "${scope}" scope: keys and the webhook secret are managed in the account area.`,
    );
  throw new AppError('FORBIDDEN', `This API key lacks the "${scope}" scope.`);
}

/** Analysts and admins read across accounts. */
export function isAnalyst(principal: Principal): boolean {
  return principal.roles.has('analyst') || principal.roles.has('admin');
}

/** Admins (and the operator) manage accounts: create them, set memberships, grant credits, manage anyone's keys. */
export function requireAdmin(principal: Principal, what: string): void {
  if (!principal.roles.has('admin')) throw new AppError('FORBIDDEN', `Only admins may ${what}.`);
}

export function requireAnalyst(principal: Principal): void {
  if (!isAnalyst(principal)) throw new AppError('FORBIDDEN', 'Only analysts and admins may read across accounts.');
}

/** An account's own rows are its holder's; anyone else's are for analysts and admins. */
export function requireAccountAccess(principal: Principal, accountId: string): void {
  if (accountId !== principal.accountId) requireAnalyst(principal);
}

/** Whose rows a caller's reads may reach: null for analysts and admins (every account), else the caller's own account. */
export function readableAccount(principal: Principal): string | null {
  return isAnalyst(principal) ? null : principal.accountId;
}

/** The account a read is about: the caller's own by default; another one only for analysts and admins (FORBIDDEN otherwise). */
export function accountToRead(principal: Principal, accountId: string | null | undefined): string {
  if (accountId) requireAccountAccess(principal, accountId);
  return accountId ?? principal.accountId;
}
