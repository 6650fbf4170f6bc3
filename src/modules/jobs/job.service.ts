import type { Job } from './job.entity.js';
import type { JobRepository } from './job.repository.js';
import type { TaskRunner } from './task-runner.js';

/** Cancelling a job: its hold is released and its work stopped; a finished job is left as it is. */
export class JobService {
  constructor(
    private readonly jobs: JobRepository,
    private readonly runner: TaskRunner,
  ) {}

  async cancel(accountId: string, jobId: string): Promise<Job> {
    const job = await this.jobs.get(accountId, jobId);
    if (job.status === 'QUEUED' || job.status === 'RUNNING') await this.runner.cancel(job.id);
    return this.jobs.get(accountId, jobId);
  }
}
