import { Account } from '../modules/accounts/account.entity.js';
import { Membership } from '../modules/accounts/membership.entity.js';
import { ApiKey } from '../modules/api-keys/api-key.entity.js';
import { CreditBalance } from '../modules/credits/credit-balance.entity.js';
import { CreditEntry } from '../modules/credits/credit-entry.entity.js';
import { Job } from '../modules/jobs/job.entity.js';

/** Every entity the ORM knows. */
export const ENTITIES = [Account, Membership, ApiKey, CreditBalance, CreditEntry, Job];
