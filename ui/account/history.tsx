import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { HISTORY_BY_TASK, gql, messageOf, type CreditEntry, type HistoryRow } from './api.js';
import { when } from './format.js';

const OPERATIONS: Record<string, string> = { PARSE: 'Parse', TRANSCRIBE: 'Transcribe' };
const KINDS: Record<string, string> = {
  GRANT: 'Grant',
  ADJUST: 'Adjustment',
  EXPIRE: 'Expiry',
  HOLD: 'Hold',
  CAPTURE: 'Capture',
  RELEASE: 'Release',
};
const STATUSES: Record<string, string> = {
  QUEUED: 'Queued',
  RUNNING: 'Running',
  SUCCEEDED: 'Succeeded',
  FAILED: 'Failed',
  CANCELED: 'Canceled',
};

const signed = (n: number) => (n > 0 ? `+${n}` : n < 0 ? `−${-n}` : '0');

/** What a row did to the credits, as a person reads it: a task's charge (a failed one is free), an entry's change. */
function creditsOf(row: HistoryRow): string {
  const { job, entry } = row;
  if (!job) return signed(entry!.availableDelta);
  if (job.status === 'SUCCEEDED') return signed(-job.creditsCharged);
  if (job.status === 'FAILED') return 'free: failed';
  if (job.status === 'CANCELED') return 'free: canceled';
  return `${job.creditsHeld} held`;
}

/** A task's ledger entries, as the CSV has them. */
function RawEntries({ entries, id }: { entries: CreditEntry[]; id: string }) {
  return (
    <table id={id} class="raw-entries">
      <caption class="visually-hidden">Ledger entries of this task</caption>
      <thead>
        <tr>
          <th scope="col">Entry</th>
          <th scope="col">Amount</th>
          <th scope="col">Available</th>
          <th scope="col">Held</th>
          <th scope="col">When</th>
        </tr>
      </thead>
      <tbody>
        {entries.map((e) => (
          <tr key={e.id}>
            <td>{e.kind}</td>
            <td>{e.amount}</td>
            <td>{signed(e.availableDelta)}</td>
            <td>{signed(e.heldDelta)}</td>
            <td>{when(e.createdAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The credit history, one row per task (its entries one click away) and one per grant or adjustment, ten to a page. */
export function CreditHistory({ onError }: { onError: (message: string) => void }) {
  const [pages, setPages] = useState<(string | null)[]>([null]);
  const [rows, setRows] = useState<HistoryRow[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [open, setOpen] = useState<Set<string>>(new Set());
  const page = pages.length;

  useEffect(() => {
    gql(HISTORY_BY_TASK, { first: 10, after: pages.at(-1)! }).then(
      (r) => {
        setRows(r.creditHistoryByTask.edges.map((e) => e.node));
        setNext(r.creditHistoryByTask.pageInfo.hasNextPage ? r.creditHistoryByTask.pageInfo.endCursor : null);
      },
      (e) => onError(messageOf(e)),
    );
  }, [pages]);

  const toggle = (id: string) => {
    const now = new Set(open);
    if (!now.delete(id)) now.add(id);
    setOpen(now);
  };

  return (
    <>
      <div class="table-wrap">
        <table class="history">
          <caption class="visually-hidden">Credit history by task, newest first, page {page}</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Task</th>
              <th scope="col">Credits</th>
              <th scope="col">Status</th>
              <th scope="col">
                <span class="visually-hidden">Ledger entries</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {rows && !rows.length && (
              <tr>
                <td colSpan={5}>Nothing yet.</td>
              </tr>
            )}
            {rows?.map((row) => {
              const { job, entry } = row;
              const shown = open.has(row.id);
              const rawId = `entries-${row.id}`;
              return (
                <Fragment key={row.id}>
                  <tr data-row={job ? 'task' : 'entry'}>
                    <td>{when(row.createdAt)}</td>
                    <td>
                      {job ? (OPERATIONS[job.operation] ?? job.operation) : (KINDS[entry!.kind] ?? entry!.kind)}
                      {entry?.reason && <span class="muted"> · {entry.reason}</span>}
                    </td>
                    <td>{creditsOf(row)}</td>
                    <td>{job ? <span title={job.error?.message}>{STATUSES[job.status] ?? job.status}</span> : ''}</td>
                    <td>
                      {job && (
                        <button
                          type="button"
                          class="secondary small"
                          aria-expanded={shown}
                          aria-controls={rawId}
                          onClick={() => toggle(row.id)}
                        >
                          {shown ? 'Hide entries' : 'Entries'}
                        </button>
                      )}
                    </td>
                  </tr>
                  {job && shown && (
                    <tr class="raw">
                      <td colSpan={5}>
                        <RawEntries entries={job.creditEntries} id={rawId} />
                      </td>
                    </tr>
                  )}
                </Fragment>
              );
            })}
          </tbody>
        </table>
      </div>
      <div class="row">
        <button type="button" class="secondary" disabled={page === 1} onClick={() => setPages(pages.slice(0, -1))}>
          Newer
        </button>
        <span>Page {page}</span>
        <button type="button" class="secondary" disabled={!next} onClick={() => setPages([...pages, next])}>
          Older
        </button>
      </div>
    </>
  );
}
