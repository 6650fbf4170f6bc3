import { AppError } from '../../errors.js';
import { failpoint } from '../../failpoints.js';
import { jobPolicy } from './job.policy.js';
import type { Page } from '../paging.js';
import type { Principal } from '../api-keys/api-key.service.js';
import type { TaskLedger } from '../tasks/task-ledger.js';
import type { Job } from './job.entity.js';
import type { JobRepository } from './job.repository.js';
import type { TaskRunner } from '../tasks/task-runner.js';

/**
 * Jobs as callers see them, for both doors: reading one (read scope; another account's job is
 * NOT_FOUND, as an unknown one), listing, cancelling; and ending them from outside their work (the
 * sweeper's deadline, the process stopping).
 */
export class JobService {
  constructor(
    private readonly jobs: JobRepository,
    private readonly runner: TaskRunner,
    private readonly ledger: TaskLedger,
  ) {}

  /** One of the caller's jobs (GraphQL job(id), GET /api/jobs/{id}): read scope, its own account only. */
  forCaller(principal: Principal, jobId: string): Promise<Job> {
    jobPolicy.read(principal);
    return this.jobs.get(principal.accountId, jobId);
  }

  /**
   * One of the caller's finished transcriptions (its subtitles, on both doors: GET
   * /api/transcriptions/{id}.srt|.vtt and GraphQL transcription(jobId)): read scope; NOT_FOUND for
   * anything else (a parse, a job still running or failed, another account's).
   */
  async finishedTranscription(principal: Principal, jobId: string): Promise<Job & { result: Record<string, unknown> }> {
    const job = await this.forCaller(principal, jobId);
    if (job.operation !== 'TRANSCRIBE' || job.status !== 'SUCCEEDED' || !job.result)
      throw new AppError('NOT_FOUND', 'No finished transcription with this id.');
    return job as Job & { result: Record<string, unknown> };
  }

  /** A job the caller just started (a 202's body, startTranscription's answer): no read scope needed for its own new job. */
  started(principal: Principal, jobId: string): Promise<Job> {
    jobPolicy.readStarted(principal);
    return this.jobs.get(principal.accountId, jobId);
  }

  /** The caller's jobs, newest first (read scope). */
  list(principal: Principal, first: number | null | undefined, after: string | null | undefined): Promise<Page<Job>> {
    jobPolicy.read(principal);
    return this.jobs.list(principal.accountId, first, after);
  }

  /** Many jobs at once (a batching loader's): only those the caller may read (analysts: any account's). */
  many(principal: Principal, jobIds: readonly string[]): Promise<Job[]> {
    return this.jobs.getMany(jobIds, jobPolicy.readMany(principal));
  }

  /** Fails the jobs past their deadline (a crashed worker's too), releases their holds, and tells who listens; returns how many. */
  async sweep(): Promise<number> {
    failpoint('sweep.before');
    const swept = await this.ledger.sweepExpired();
    failpoint('sweep.after');
    for (const { jobId, webhookUrl } of swept) this.runner.ended(jobId, 'FAILED', webhookUrl);
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
    jobPolicy.cancel(principal);
    const { accountId } = principal;
    const job = await this.jobs.get(accountId, jobId);
    failpoint('job.beforeCancel');
    if (job.status === 'QUEUED' || job.status === 'RUNNING') await this.runner.cancel(job.id);
    failpoint('job.afterCancel');
    return this.jobs.get(accountId, jobId);
  }
}
