import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Prometheus metrics of one process (its own registry, so several apps in one test process do not
 * collide). Served at GET /metrics, behind METRICS_TOKEN when it is set.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly httpRequests = new Histogram({
    name: 'mediagate_http_request_duration_seconds',
    help: 'HTTP requests by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });

  readonly tasks = new Counter({
    name: 'mediagate_tasks_total',
    help: 'Finished parse and transcription tasks by outcome (SUCCEEDED or the error code)',
    labelNames: ['operation', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly creditsCharged = new Counter({
    name: 'mediagate_credits_charged_total',
    help: 'Credits captured by successful tasks',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  readonly mediaReads = new Counter({
    name: 'mediagate_media_reads_total',
    help: 'Media read during parses for size, length, codecs and sound, by reader (in_process, or ffprobe for what that cannot read) and outcome (read or failed)',
    labelNames: ['reader', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly mediaReadReuses = new Counter({
    name: 'mediagate_media_read_reuses_total',
    help: 'Media reads answered by a read already made (cache) or being made (in_flight) for the same URL',
    labelNames: ['how'] as const,
    registers: [this.registry],
  });

  readonly probeMemory = new Gauge({
    name: 'mediagate_probe_memory_bytes',
    help: 'Bytes of media held by media probes now (counted against PROBE_MEMORY_BYTES)',
    registers: [this.registry],
  });

  readonly probeMemoryPeak = new Gauge({
    name: 'mediagate_probe_memory_peak_bytes',
    help: 'The most bytes of media media probes held at once since the process started (never above PROBE_MEMORY_BYTES)',
    registers: [this.registry],
  });

  readonly probeMemoryLimit = new Gauge({
    name: 'mediagate_probe_memory_limit_bytes',
    help: 'Bytes of media all media probes may hold at once (PROBE_MEMORY_BYTES)',
    registers: [this.registry],
  });

  readonly probesRunning = new Gauge({
    name: 'mediagate_probes_running',
    help: 'Media probes running now (at most PROBE_CONCURRENCY), and of them with an ffprobe process (kind="ffprobe", at most PROBE_FFPROBE_CONCURRENCY)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly probesSkipped = new Counter({
    name: 'mediagate_probes_skipped_total',
    help: 'Media probes given up for want of budget, by what was lacking: probes (PROBE_CONCURRENCY), account (PROBE_MAX_PER_ACCOUNT), bytes (PROBE_MEMORY_BYTES), ffprobe (PROBE_FFPROBE_CONCURRENCY)',
    labelNames: ['why'] as const,
    registers: [this.registry],
  });

  readonly streamedBytes = new Counter({
    name: 'mediagate_streamed_bytes_total',
    help: 'Bytes sent to callers by stream URLs (/api/streams/{token}), included in the parses’ credit',
    registers: [this.registry],
  });

  readonly streams = new Counter({
    name: 'mediagate_streams_total',
    help: 'Stream requests (/api/streams/{token}) by outcome: opened, or the error code that refused them',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly jobWatchReads = new Counter({
    name: 'mediagate_job_watch_reads_total',
    help: 'Reads of a job row made for jobUpdated subscriptions: one per change of a watched job, however many follow it',
    registers: [this.registry],
  });

  readonly jobWatchers = new Gauge({
    name: 'mediagate_job_watchers',
    help: 'Jobs watched now for jobUpdated subscriptions (one watcher per job per process)',
    registers: [this.registry],
  });

  readonly jobSubscribers = new Gauge({
    name: 'mediagate_job_subscriptions',
    help: 'jobUpdated subscriptions running now in this process (at most SUBSCRIPTIONS_PER_ACCOUNT per account)',
    registers: [this.registry],
  });

  /** What the probe budget holds now. */
  probeBudget(state: { bytes: number; peakBytes: number; probes: number; ffprobes: number }): void {
    this.probeMemory.set(state.bytes);
    this.probeMemoryPeak.set(state.peakBytes);
    this.probesRunning.set({ kind: 'all' }, state.probes);
    this.probesRunning.set({ kind: 'ffprobe' }, state.ffprobes);
  }

  /** The probe budget's bytes, shown beside what it holds (all at zero until the first probe). */
  probeBudgetLimit(bytes: number): void {
    this.probeMemoryLimit.set(bytes);
    this.probeBudget({ bytes: 0, peakBytes: 0, probes: 0, ffprobes: 0 });
  }

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'mediagate_' });
  }
}
