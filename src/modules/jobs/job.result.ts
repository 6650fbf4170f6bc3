import type { Job, JobOperation } from './job.entity.js';

/** What a succeeded task settled: the provider that did it, the credits captured, the available balance right after. */
export interface Settled {
  provider: string;
  charged: number;
  balance: number;
}

/**
 * The success body of a task, built here for every door so they cannot differ: the answer a waiting
 * caller gets, and a finished job's `result` (GraphQL `job`, GET /api/jobs/{id}, webhooks).
 */
export function successBody<E extends object, R extends object>(jobId: string, echo: E, result: R, settled: Settled) {
  return {
    id: jobId,
    status: 'SUCCEEDED' as const,
    ...echo,
    ...result,
    provider: settled.provider,
    credits: { charged: settled.charged, balance: settled.balance },
  };
}

/** The request fields each operation's answer repeats (what the services pass as `echo`). */
const ECHOED: Record<JobOperation, readonly string[]> = {
  PARSE: ['url', 'mode', 'quality', 'audioFormat', 'stream'],
  TRANSCRIBE: ['mediaUrl'],
};

/** A succeeded job's answer, rebuilt from its row: the stored result with the balance kept at its capture; null before. */
export function jobSuccessBody(job: Job): Record<string, unknown> | null {
  if (job.status !== 'SUCCEEDED' || !job.result) return null;
  const echo = Object.fromEntries(ECHOED[job.operation].filter((k) => k in job.input).map((k) => [k, job.input[k]]));
  return successBody(job.id, echo, job.result, {
    provider: job.provider ?? '',
    charged: job.creditsCharged,
    balance: job.balanceAfter ?? 0,
  });
}
