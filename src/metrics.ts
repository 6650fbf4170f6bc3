import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** One metric as /metrics shows it: its type, name, help text, label names (none when left out) and a histogram's buckets. */
type MetricSpec =
  | { kind: 'counter' | 'gauge'; name: string; help: string; labelNames?: readonly string[] }
  | { kind: 'histogram'; name: string; help: string; labelNames?: readonly string[]; buckets: readonly number[] };

/** Every metric of the process but Node's own, in the order /metrics lists them. */
const METRICS = {
  httpRequests: {
    kind: 'histogram',
    name: 'mediagate_http_request_duration_seconds',
    help: 'HTTP requests by method, route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  },
  tasks: {
    kind: 'counter',
    name: 'mediagate_tasks_total',
    help: 'Finished parse and transcription tasks by outcome (SUCCEEDED or the error code)',
    labelNames: ['operation', 'outcome'],
  },
  creditsCharged: {
    kind: 'counter',
    name: 'mediagate_credits_charged_total',
    help: 'Credits captured by successful tasks',
    labelNames: ['operation'],
  },
  mediaReads: {
    kind: 'counter',
    name: 'mediagate_media_reads_total',
    help: 'Media read during parses for size, length, codecs and sound, by reader (in_process, or ffprobe for what that cannot read) and outcome (read or failed)',
    labelNames: ['reader', 'outcome'],
  },
  mediaReadReuses: {
    kind: 'counter',
    name: 'mediagate_media_read_reuses_total',
    help: 'Media reads answered by a read already made (cache) or being made (in_flight) for the same URL',
    labelNames: ['how'],
  },
  probeMemory: {
    kind: 'gauge',
    name: 'mediagate_probe_memory_bytes',
    help: 'Bytes of media held by media probes now (counted against PROBE_MEMORY_BYTES)',
  },
  probeMemoryPeak: {
    kind: 'gauge',
    name: 'mediagate_probe_memory_peak_bytes',
    help: 'The most bytes of media media probes held at once since the process started (never above PROBE_MEMORY_BYTES)',
  },
  probeMemoryLimit: {
    kind: 'gauge',
    name: 'mediagate_probe_memory_limit_bytes',
    help: 'Bytes of media all media probes may hold at once (PROBE_MEMORY_BYTES)',
  },
  probesRunning: {
    kind: 'gauge',
    name: 'mediagate_probes_running',
    help: 'Media probes running now (at most PROBE_CONCURRENCY), and of them with an ffprobe process (kind="ffprobe", at most PROBE_FFPROBE_CONCURRENCY)',
    labelNames: ['kind'],
  },
  probesSkipped: {
    kind: 'counter',
    name: 'mediagate_probes_skipped_total',
    help: 'Media probes given up for want of budget, by what was lacking: probes (PROBE_CONCURRENCY), account (PROBE_MAX_PER_ACCOUNT), bytes (PROBE_MEMORY_BYTES), ffprobe (PROBE_FFPROBE_CONCURRENCY)',
    labelNames: ['why'],
  },
  streamedBytes: {
    kind: 'counter',
    name: 'mediagate_streamed_bytes_total',
    help: 'Bytes sent to callers by stream URLs (/api/streams/{token}), included in the parses’ credit',
  },
  streams: {
    kind: 'counter',
    name: 'mediagate_streams_total',
    help: 'Stream requests (/api/streams/{token}) by outcome: opened, or the error code that refused them',
    labelNames: ['outcome'],
  },
  jobWatchReads: {
    kind: 'counter',
    name: 'mediagate_job_watch_reads_total',
    help: 'Reads of a job row made for jobUpdated subscriptions: one per change of a watched job, however many follow it',
  },
  jobWatchers: {
    kind: 'gauge',
    name: 'mediagate_job_watchers',
    help: 'Jobs watched now for jobUpdated subscriptions (one watcher per job per process)',
  },
  jobSubscribers: {
    kind: 'gauge',
    name: 'mediagate_job_subscriptions',
    help: 'jobUpdated subscriptions running now in this process (at most SUBSCRIPTIONS_PER_ACCOUNT per account)',
  },
} as const satisfies Record<string, MetricSpec>;

type LabelsOf<S> = S extends { labelNames: readonly (infer L extends string)[] } ? L : string;
/** The prom-client object a spec makes, with its label names as its labels' type. */
type MetricOf<S extends MetricSpec> = S['kind'] extends 'counter'
  ? Counter<LabelsOf<S>>
  : S['kind'] extends 'gauge'
    ? Gauge<LabelsOf<S>>
    : Histogram<LabelsOf<S>>;

type Table = { readonly [K in keyof typeof METRICS]: MetricOf<(typeof METRICS)[K]> };

/** What a probe budget holds, as the metrics show it. */
interface ProbeHeld {
  bytes: number;
  peakBytes: number;
  probes: number;
  ffprobes: number;
}

/**
 * Prometheus metrics of one process (its own registry, so several apps in one test process do not
 * collide). Served at GET /metrics, behind METRICS_TOKEN when it is set.
 */
export type Metrics = Table & {
  readonly registry: Registry;
  /** What the probe budget holds now. */
  probeBudget(state: ProbeHeld): void;
  /** The probe budget's bytes, shown beside what it holds (all at zero until the first probe). */
  probeBudgetLimit(bytes: number): void;
};

function metricOf(spec: MetricSpec, registry: Registry): Counter | Gauge | Histogram {
  const registers = [registry];
  if (spec.kind === 'histogram') {
    const { kind, buckets, ...config } = spec;
    return new Histogram({ ...config, buckets: [...buckets], registers });
  }
  const { kind, ...config } = spec;
  return kind === 'counter' ? new Counter({ ...config, registers }) : new Gauge({ ...config, registers });
}

/** The metrics of a new process (or of one app of a test process), in a registry of their own. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  const table = Object.fromEntries(Object.entries(METRICS).map(([key, spec]) => [key, metricOf(spec, registry)])) as Table;
  collectDefaultMetrics({ register: registry, prefix: 'mediagate_' });
  const probeBudget = (state: ProbeHeld) => {
    table.probeMemory.set(state.bytes);
    table.probeMemoryPeak.set(state.peakBytes);
    table.probesRunning.set({ kind: 'all' }, state.probes);
    table.probesRunning.set({ kind: 'ffprobe' }, state.ffprobes);
  };
  return {
    ...table,
    registry,
    probeBudget,
    probeBudgetLimit: (bytes) => {
      table.probeMemoryLimit.set(bytes);
      probeBudget({ bytes: 0, peakBytes: 0, probes: 0, ffprobes: 0 });
    },
  };
}
