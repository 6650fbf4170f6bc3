import { Account } from './accounts/account.entity.js';
import { Membership } from './accounts/membership.entity.js';
import { ApiKey } from './api-keys/api-key.entity.js';
import { CreditBalance } from './credits/credit-balance.entity.js';
import { CreditEntry } from './credits/credit-entry.entity.js';
import { Job } from './jobs/job.entity.js';

/** Every entity the ORM knows. */
export const ENTITIES = [Account, Membership, ApiKey, CreditBalance, CreditEntry, Job];
