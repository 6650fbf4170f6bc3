import { AppError } from '../../errors.js';
import { requireMembership, requireScope } from '../access.js';
import type { Principal } from '../principal.js';

/** Qualities only members get. */
const MEMBERS_ONLY_QUALITIES: ReadonlySet<string> = new Set(['max', '1080']);

/** Who may parse, and at what quality. */
export const parsePolicy = {
  /** The parse scope, checked first (before the input is read), as GraphQL's declared rule: both doors refuse alike. */
  start(principal: Principal): void {
    requireScope(principal, 'parse');
  },
  /**
   * Once the input is valid: with an API key the work needs a membership (a signed-in frontend user
   * may use the free tier); `max` and `1080` need one always. Returns the quality the parse gets: the
   * one asked for, or by default `1080` for members and `720` for others.
   */
  quality<Q extends string>(principal: Principal, asked: Q | undefined): Q | '1080' | '720' {
    if (principal.via === 'api_key') requireMembership(principal);
    const quality = asked ?? (principal.isMember ? '1080' : '720');
    if (MEMBERS_ONLY_QUALITIES.has(quality) && !principal.isMember)
      throw new AppError('MEMBERSHIP_REQUIRED', `Quality ${quality} requires an active monthly membership.`);
    return quality;
  },
  /** Whether a parse needed a membership (an API key, or a members-only quality): its stream URLs are refused once it ends. */
  needsMembership(principal: Principal, quality: string): boolean {
    return principal.via === 'api_key' || MEMBERS_ONLY_QUALITIES.has(quality);
  },
};
