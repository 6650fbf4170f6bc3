import type { Notifications } from '../../db/notifications.js';
import type { TaskLedger } from './task-ledger.js';

const FINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELED']);

/**
 * Calls `stop` when a queued job's row leaves RUNNING through another instance (its cancelJob, its
 * sweeper): the database's notification says so at once; the row is re-read after the listener
 * reconnects (a notification may have been missed) and, as a backstop, now and then. Returns the
 * function that stops watching.
 */
export function watchForCancel(jobId: string, deps: { ledger: TaskLedger; notifications: Notifications }, stop: () => void): () => void {
  const { ledger, notifications } = deps;
  const recheck = () =>
    void ledger.status(jobId).then(
      (status) => status !== 'RUNNING' && stop(),
      () => undefined,
    );
  const unsubscribe = [
    // Only a final status: an earlier one (the QUEUED of its insert) may arrive after the claim.
    notifications.on('mediagate_job', (n) => n.id === jobId && FINAL.has(n.status) && stop()),
    notifications.onReconnect(recheck),
  ];
  let timer: NodeJS.Timeout;
  const backstop = () => {
    timer = setTimeout(() => {
      recheck();
      backstop();
    }, notifications.recheckMs);
  };
  backstop();
  return () => {
    unsubscribe.forEach((off) => off());
    clearTimeout(timer);
  };
}
