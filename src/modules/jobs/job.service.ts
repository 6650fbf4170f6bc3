import { failpoint } from '../../failpoints.js';
import { requireScope } from '../access.js';
import type { Principal } from '../api-keys/api-key.service.js';
import type { LedgerService } from '../credits/ledger.service.js';
import type { Job } from './job.entity.js';
import type { JobRepository } from './job.repository.js';
import type { TaskRunner } from './task-runner.js';

/** Ending jobs from outside their work: a caller's cancel, and the sweeper's deadline. */
export class JobService {
  constructor(
    private readonly jobs: JobRepository,
    private readonly runner: TaskRunner,
    private readonly ledger: LedgerService,
  ) {}

  /** Fails the jobs past their deadline (a crashed worker's too), releases their holds, and tells who listens; returns how many. */
  async sweep(): Promise<number> {
    failpoint('sweep.before');
    const swept = await this.ledger.sweepExpired();
    failpoint('sweep.after');
    for (const { jobId, webhookUrl } of swept) this.runner.onEnded(jobId, 'FAILED', webhookUrl);
    return swept.length;
  }

  /** The process stops past its grace period: see TaskRunner.interruptAll. Returns how many tasks were interrupted. */
  interruptRunning(): number {
    return this.runner.interruptAll();
  }

  /**
   * Cancels one of the caller's jobs, for both doors (GraphQL cancelJob, POST /api/jobs/{id}/cancel):
   * its hold is released and its work stopped; a finished job is returned as it is; another account's
   * job is NOT_FOUND, as an unknown one. It changes what the transcribe scope started, so it needs that scope.
   */
  async cancel(principal: Principal, jobId: string): Promise<Job> {
    requireScope(principal, 'transcribe');
    const { accountId } = principal;
    const job = await this.jobs.get(accountId, jobId);
    failpoint('job.beforeCancel');
    if (job.status === 'QUEUED' || job.status === 'RUNNING') await this.runner.cancel(job.id);
    failpoint('job.afterCancel');
    return this.jobs.get(accountId, jobId);
  }
}
