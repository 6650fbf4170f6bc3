import { requireMembership, requireScope } from '../access.js';
import type { Principal } from '../principal.js';

/** Who may transcribe. */
export const transcriptionPolicy = {
  /** The transcribe scope, checked first (before the input is read), as GraphQL's declared rule: both doors refuse alike. */
  start(principal: Principal): void {
    requireScope(principal, 'transcribe');
  },
  /** Once the input is valid: transcription needs an active membership, whoever asks. */
  afterInput(principal: Principal): void {
    requireMembership(principal);
  },
};
