import { setTimeout as sleep } from 'node:timers/promises';
import type { Job } from './job.entity.js';
import type { JobRepository } from './job.repository.js';

const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELED']);

/**
 * A job's states as they change: the current one at once, then each change of status or progress,
 * ending with the final state. It reads the job row, so it sees work done by any instance.
 */
export async function* watchJob(jobs: JobRepository, accountId: string, id: string, intervalMs = 500): AsyncGenerator<Job> {
  let job = await jobs.get(accountId, id);
  yield job;
  while (!TERMINAL.has(job.status)) {
    await sleep(intervalMs);
    const next = await jobs.get(accountId, id);
    if (next.status !== job.status || next.progress !== job.progress) yield next;
    job = next;
  }
}
