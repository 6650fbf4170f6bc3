import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { HISTORY, USAGE, download, gql, messageOf, type CreditEntry, type UsageBucket } from './api.js';
import { when } from './format.js';

const DAY_MS = 86_400_000;
const OPERATIONS = ['PARSE', 'TRANSCRIBE'] as const;

/** Credits used per day over the last 30 days, one line per operation (days without use are 0). */
function UsageChart({ buckets, from }: { buckets: UsageBucket[]; from: Date }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!box.current) return;
    const days = Array.from({ length: 30 }, (_, i) => (from.getTime() + i * DAY_MS) / 1000);
    const series = OPERATIONS.map((op) =>
      days.map((d) => buckets.filter((b) => b.key === op && Math.abs(Date.parse(b.period) / 1000 - d) < DAY_MS / 2000).reduce((s, b) => s + b.credits, 0)),
    );
    const width = Math.max(240, box.current.clientWidth || 320);
    const chart = new uPlot(
      {
        width,
        height: 220,
        series: [{}, { label: 'Parse', stroke: '#2563eb', width: 2 }, { label: 'Transcribe', stroke: '#d97706', width: 2 }],
        axes: [{}, { label: 'credits' }],
        scales: { x: { time: true } },
      },
      [days, ...series],
      box.current,
    );
    // Follows the page's width (a phone turned sideways, a window resized).
    const resize = new ResizeObserver(([entry]) => chart.setSize({ width: Math.max(240, Math.floor(entry.contentRect.width)), height: 220 }));
    resize.observe(box.current);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [buckets, from]);
  return <div ref={box} class="chart" role="img" aria-label="Credits used per day over the last 30 days, by operation" />;
}

export function UsageSection() {
  const [buckets, setBuckets] = useState<UsageBucket[] | null>(null);
  const [from] = useState(() => new Date(Math.floor(Date.now() / DAY_MS - 29) * DAY_MS));
  const [pages, setPages] = useState<{ after: string | null }[]>([{ after: null }]);
  const [rows, setRows] = useState<CreditEntry[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const page = pages.length;

  useEffect(() => {
    gql(USAGE, { from: from.toISOString(), to: new Date(from.getTime() + 30 * DAY_MS).toISOString() }).then(
      (r) => setBuckets(r.creditUsage),
      (e) => setError(messageOf(e)),
    );
  }, [from]);
  useEffect(() => {
    gql(HISTORY, { first: 10, after: pages.at(-1)!.after }).then(
      (r) => {
        setRows(r.creditHistory.edges.map((e) => e.node));
        setNext(r.creditHistory.pageInfo.hasNextPage ? r.creditHistory.pageInfo.endCursor : null);
      },
      (e) => setError(messageOf(e)),
    );
  }, [pages]);

  return (
    <section id="usage" class="card" aria-labelledby="usage-title">
      <h2 id="usage-title">Usage</h2>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <h3>Credits used per day, last 30 days</h3>
      {buckets ? <UsageChart buckets={buckets} from={from} /> : <p>Loading…</p>}
      <h3>Credit history</h3>
      <div class="table-wrap">
        <table>
          <caption class="visually-hidden">Credit history, newest first, page {page}</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Kind</th>
              <th scope="col">Amount</th>
              <th scope="col">Job</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {!rows.length && (
              <tr>
                <td colSpan={5}>No entries yet.</td>
              </tr>
            )}
            {rows.map((r) => (
              <tr key={r.id}>
                <td>{when(r.createdAt)}</td>
                <td>{r.kind}</td>
                <td>{r.amount}</td>
                <td>{r.jobId ? <code title={r.jobId}>{r.jobId.slice(0, 8)}</code> : '—'}</td>
                <td>{r.reason ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div class="row">
        <button type="button" class="secondary" disabled={page === 1} onClick={() => setPages(pages.slice(0, -1))}>
          Newer
        </button>
        <span>Page {page}</span>
        <button type="button" class="secondary" disabled={!next} onClick={() => setPages([...pages, { after: next }])}>
          Older
        </button>
        <button type="button" onClick={() => download('/api/credit-history.csv', 'credit-history.csv').catch((e) => setError(messageOf(e)))}>
          Download CSV
        </button>
      </div>
    </section>
  );
}
