import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'mediagate_' });
  }
}
