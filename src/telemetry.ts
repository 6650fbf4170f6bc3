import type { Attributes, AttributeValue } from '@opentelemetry/api';
import type { ExportResult } from '@opentelemetry/core';
import type { ResourceDetector } from '@opentelemetry/resources';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Config } from './config.js';
import { withoutStreamTokens } from './logger.js';

/** The attribute that ties a trace to the request id callers see in `x-request-id` and in logs. */
export const REQUEST_ID_ATTRIBUTE = 'mediagate.request_id';

/** Probes and scrapes are polled every few seconds: tracing them would drown the requests. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** Spans still buffered at shutdown get this long to reach the collector; a dead one must not hold up the stop. */
const FLUSH_TIMEOUT_MS = 2000;

let sdk: { shutdown(): Promise<void> } | null = null;

/**
 * Starts OpenTelemetry tracing when OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise nothing of it is
 * even loaded. Must run before the server side is imported: instrumentations patch modules as they load.
 */
export async function startTelemetry(config: Config): Promise<void> {
  if (!config.telemetry || sdk) return;
  // No ESM loader hook (import-in-the-middle) is needed: MikroORM imports pg and the GraphQL doors import
  // graphql as ES modules, but both are CommonJS inside, and their instrumentations patch the files
  // those packages require (pg/lib/client.js, pg-pool, graphql/execution/execute.js...). Fastify and
  // undici report through diagnostics_channel; http is a builtin. An instrumentation of a package
  // that is ESM throughout would need `module.register('@opentelemetry/instrumentation/hook.mjs')`.
  // The pieces NodeSDK (@opentelemetry/sdk-node) would assemble for traces, and nothing more: it
  // depends on every exporter of logs, metrics and traces (gRPC, protobuf, Zipkin, Prometheus),
  // about 200 MB of node_modules for one OTLP/HTTP trace exporter. What it does by default is done
  // here alike: OTEL_SDK_DISABLED and OTEL_LOG_LEVEL are honoured, the resource is the SDK's default
  // with the env, process and host detectors (or OTEL_NODE_RESOURCE_DETECTORS) and the service name,
  // spans are limited by OTEL_SPAN_* (the tracer provider reads them), the context manager is
  // AsyncLocalStorage.
  const [
    { DiagConsoleLogger, SpanKind, context, diag, trace },
    core,
    resources,
    { BatchSpanProcessor, ParentBasedSampler, SamplingDecision },
    { NodeTracerProvider },
    { registerInstrumentations },
    { OTLPTraceExporter },
    { HttpInstrumentation },
    { FastifyOtelInstrumentation },
    { GraphQLInstrumentation },
    { PgInstrumentation },
    { UndiciInstrumentation },
  ] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/instrumentation-http'),
    import('@fastify/otel'),
    import('@opentelemetry/instrumentation-graphql'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-undici'),
  ]);
  if (core.getBooleanFromEnv('OTEL_SDK_DISABLED')) return;
  const logLevel = core.getStringFromEnv('OTEL_LOG_LEVEL');
  if (logLevel != null) diag.setLogger(new DiagConsoleLogger(), { logLevel: core.diagLogLevelFromString(logLevel) });
  const redact = redactor(secretsOf(config));
  const instrumentations = [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0]),
      requireParentforOutgoingSpans: true,
    }),
    new FastifyOtelInstrumentation({
      registerOnInitialization: true,
      ignorePaths: (route: { url: string }) => UNTRACED_PATHS.has(route.url.split('?')[0]),
      // Request and handler spans; a span per lifecycle hook would bury them.
      instrumentHooks: false,
      // The request id (genReqId) goes on Fastify's span and on the HTTP server span, the trace's root.
      requestHook: (span, request) => {
        span.setAttribute(REQUEST_ID_ATTRIBUTE, request.id);
        const root = trace.getActiveSpan();
        if (root && root !== span) root.setAttribute(REQUEST_ID_ATTRIBUTE, request.id);
      },
    }),
    // Variables and argument values stay out (allowValues false); the document's literals are redacted.
    new GraphQLInstrumentation({ mergeItems: true, ignoreTrivialResolveSpans: true, allowValues: false }),
    // pg-boss polls the database all the time: only statements run for a request are traced.
    new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
    new UndiciInstrumentation({ requireParentforSpans: true }),
  ];
  registerInstrumentations({ instrumentations });
  const resource = resources
    .defaultResource()
    .merge(
      resources.detectResources({ detectors: resourceDetectors(resources, core.getStringListFromEnv('OTEL_NODE_RESOURCE_DETECTORS')) }),
    )
    .merge(resources.resourceFromAttributes({ 'service.name': config.telemetry.serviceName }));
  const provider = new NodeTracerProvider({
    resource,
    // The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT (and _HEADERS, _TIMEOUT...) itself; the batch
    // processor reads OTEL_BSP_*. Every span passes the redactor on its way out.
    spanProcessors: [new BatchSpanProcessor(new RedactingExporter(new OTLPTraceExporter(), redact))],
    // A trace starts at the door (an incoming request); work with no request behind it (start-up,
    // the queue's polling) starts none, whatever instrumentation sees it.
    sampler: new ParentBasedSampler({
      root: {
        shouldSample: (_context, _traceId, _name, kind) => ({
          decision: kind === SpanKind.SERVER ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD,
        }),
        toString: () => 'IncomingRequestsOnly',
      },
    }),
  });
  provider.register({
    // W3C trace context and baggage, as by default, plus one rule: a request that arrives with no
    // trace of its own on a server started during a traced request (the relay that hands media to
    // ffprobe) belongs to that request, so its fetches join the request's trace.
    propagator: new core.CompositePropagator({
      propagators: [
        new core.W3CTraceContextPropagator(),
        new core.W3CBaggagePropagator(),
        {
          inject: () => {},
          extract: (extracted) => {
            const ambient = trace.getSpan(context.active());
            return trace.getSpan(extracted) || !ambient ? extracted : trace.setSpan(extracted, ambient);
          },
          fields: () => [],
        },
      ],
    }),
  });
  sdk = provider;
}

/** The resource detectors OTEL_NODE_RESOURCE_DETECTORS names, as NodeSDK reads it; env, process and host when unset. */
function resourceDetectors(resources: typeof import('@opentelemetry/resources'), names: string[] | undefined): ResourceDetector[] {
  const known: Record<string, ResourceDetector> = {
    env: resources.envDetector,
    host: resources.hostDetector,
    os: resources.osDetector,
    process: resources.processDetector,
    serviceinstance: resources.serviceInstanceIdDetector,
  };
  if (!names?.length) return [known.env, known.process, known.host];
  if (names.includes('all')) return Object.values(known);
  if (names.includes('none')) return [];
  return names.flatMap((name) => known[name] ?? []);
}

/** Sends the spans still buffered, within FLUSH_TIMEOUT_MS; part of every clean stop. */
export async function shutdownTelemetry(): Promise<void> {
  const running = sdk;
  sdk = null;
  if (!running) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    running.shutdown().catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, FLUSH_TIMEOUT_MS);
    }),
  ]);
  clearTimeout(timer);
}

/** Passes spans on to the real exporter with every attribute redacted. */
class RedactingExporter implements SpanExporter {
  constructor(
    private readonly inner: SpanExporter,
    private readonly redact: (key: string, value: AttributeValue) => AttributeValue,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(
      spans.map((span) => this.redacted(span)),
      done,
    );
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }

  /** A view of the span with redacted attributes; the span itself is the SDK's and stays untouched. */
  private redacted(span: ReadableSpan): ReadableSpan {
    const clean = (attributes: Attributes) =>
      Object.fromEntries(Object.entries(attributes).map(([key, value]) => [key, value === undefined ? value : this.redact(key, value)]));
    return Object.create(span, {
      name: { value: this.redact('span.name', span.name) },
      attributes: { value: clean(span.attributes) },
      events: { value: span.events.map((event) => ({ ...event, attributes: event.attributes && clean(event.attributes) })) },
    }) as ReadableSpan;
  }
}

/** The configured secrets and credentials, which no attribute may carry. */
function secretsOf(config: Config): string[] {
  const passwords = [config.databaseUrl, config.redisUrl, config.graphql.apqRedisUrl, config.cobalt.apiUrl, config.openai.baseUrl].map(
    (u) => {
      try {
        return u ? decodeURIComponent(new URL(u).password) : '';
      } catch {
        return '';
      }
    },
  );
  return [
    config.apiKeyPepper,
    config.openai.apiKey,
    config.deepgram.apiKey,
    config.assemblyai.apiKey,
    config.cobalt.apiKey,
    config.metricsToken,
    ...passwords,
  ].filter((s): s is string => !!s && s.length >= 6);
}

const REDACTED = 'REDACTED';
const SQL_ATTRIBUTES = new Set(['db.statement', 'db.query.text']);
/** Attributes holding a path that may end in a query string. */
const PATH_ATTRIBUTES = new Set(['url.path', 'http.target']);

/**
 * How an attribute is cleaned before it leaves the process. SQL keeps its shape but loses every
 * literal (MikroORM writes values such as key hashes and webhook secrets into the statement text);
 * GraphQL documents lose their string literals; URLs lose passwords and query values; API keys,
 * webhook secrets, Bearer tokens and the configured secrets are replaced wherever they appear.
 */
export function redactor(secrets: readonly string[]): (key: string, value: AttributeValue) => AttributeValue {
  const text = (key: string, s: string): string => {
    let out = s;
    if (SQL_ATTRIBUTES.has(key)) out = withoutSqlLiterals(out);
    if (key === 'graphql.source') out = out.replace(/"""[\s\S]*?"""|"(?:[^"\\\n]|\\.)*"/g, `"${REDACTED}"`);
    if (key === 'url.query') out = redactQuery(out);
    if (PATH_ATTRIBUTES.has(key) && out.includes('?')) out = out.slice(0, out.indexOf('?')) + redactQuery(out.slice(out.indexOf('?')));
    out = out.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi, redactUrl);
    out = out
      .replace(/\bmg_(live|test)_[A-Za-z0-9_]+/g, `mg_$1_${REDACTED}`)
      .replace(/\bwhsec_[A-Za-z0-9+/=]+/g, `whsec_${REDACTED}`)
      .replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi, `$1 ${REDACTED}`);
    out = withoutStreamTokens(out);
    for (const secret of secrets) out = out.replaceAll(secret, REDACTED);
    return out;
  };
  return (key, value) => {
    if (typeof value === 'string') return text(key, value);
    if (Array.isArray(value)) return value.map((v) => (typeof v === 'string' ? text(key, v) : v)) as AttributeValue;
    return value;
  };
}

/** Statement text with its string, dollar-quoted and numeric literals replaced by `?`; parameters ($1) stay. */
export function withoutSqlLiterals(sql: string): string {
  return sql
    .replace(/\$([A-Za-z_][A-Za-z0-9_]*)?\$[\s\S]*?\$\1\$/g, '?')
    .replace(/\b[Ee]'(?:[^'\\]|\\.|'')*'/g, '?')
    .replace(/'(?:[^']|'')*'/g, '?')
    .replace(/(?<![\w$."])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w"])/g, '?');
}

function redactUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return raw;
  }
  if (!url.password && !url.search) return raw;
  if (url.password) url.password = REDACTED;
  url.search = redactQuery(url.search);
  return url.toString();
}

/** Each `key=value` keeps its key; a segment without `=` may be a token itself and goes whole. */
function redactQuery(query: string): string {
  const lead = query.startsWith('?') ? '?' : '';
  const parts = query.slice(lead.length).split('&');
  return lead + parts.map((p) => (p === '' ? p : p.includes('=') ? `${p.slice(0, p.indexOf('='))}=${REDACTED}` : REDACTED)).join('&');
}
