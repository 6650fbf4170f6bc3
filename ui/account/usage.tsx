import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { USAGE, download, gql, messageOf, type UsageBucket } from './api.js';
import { CreditHistory } from './history.js';

const DAY_MS = 86_400_000;
const OPERATIONS = ['PARSE', 'TRANSCRIBE'] as const;

/** Credits used per day over the last 30 days, one line per operation (days without use are 0). */
function UsageChart({ buckets, from }: { buckets: UsageBucket[]; from: Date }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!box.current) return;
    const days = Array.from({ length: 30 }, (_, i) => (from.getTime() + i * DAY_MS) / 1000);
    const series = OPERATIONS.map((op) =>
      days.map((d) =>
        buckets.filter((b) => b.key === op && Math.abs(Date.parse(b.period) / 1000 - d) < DAY_MS / 2000).reduce((s, b) => s + b.credits, 0),
      ),
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
    const resize = new ResizeObserver(([entry]) =>
      chart.setSize({ width: Math.max(240, Math.floor(entry.contentRect.width)), height: 220 }),
    );
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
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    gql(USAGE, { from: from.toISOString(), to: new Date(from.getTime() + 30 * DAY_MS).toISOString() }).then(
      (r) => setBuckets(r.creditUsage),
      (e) => setError(messageOf(e)),
    );
  }, [from]);
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
      <CreditHistory onError={setError} />
      <div class="row">
        <button
          type="button"
          onClick={() => download('/api/credit-history.csv', 'credit-history.csv').catch((e) => setError(messageOf(e)))}
        >
          Download CSV
        </button>
        <span class="muted">every ledger entry</span>
      </div>
    </section>
  );
}
