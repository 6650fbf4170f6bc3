import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { makeMedia } from '../support/media.js';
import { createTestDatabase } from '../support/test-database.js';
import { jest } from '@jest/globals';

// These tests start whole processes (the CLI, a gateway), each opening its own database: seconds of
// CPU apiece, while another jest worker shares the two cores.
jest.setTimeout(120_000);

const run = promisify(execFile);
const NODE = join(process.cwd(), 'node_modules/.bin/node');
const CLI = join(process.cwd(), 'dist/cli/main.js');
const PEPPER = 'traces-test-pepper-0123456789abcdefgh';
const PROVIDER_KEY = 'sk-traces-test-provider-key-0123';
/** The database's password in DATABASE_URL (the embedded database's own, when the test runs on it). */
let dbPassword = 'traces-db-password';
const MEDIA_TOKEN = 'media-token-value-0123';
const INLINE_TOKEN = 'inline-token-value-4567';

/** One span as an OTLP/HTTP JSON export carries it, with its attributes as a plain object. */
interface ExportedSpan {
  scope: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
}

/** A collector on 127.0.0.1 that keeps what the gateway exports to POST /v1/traces. */
async function startCollector() {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces' && /json/.test(req.headers['content-type'] ?? '')) bodies.push(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const spans = (): ExportedSpan[] =>
    bodies.flatMap((body) =>
      (
        JSON.parse(body) as {
          resourceSpans: {
            scopeSpans: {
              scope: { name: string };
              spans: (Omit<ExportedSpan, 'scope' | 'attributes'> & { attributes?: { key: string; value: Record<string, unknown> }[] })[];
            }[];
          }[];
        }
      ).resourceSpans.flatMap((rs) =>
        rs.scopeSpans.flatMap((ss) =>
          ss.spans.map((s) => ({
            ...s,
            scope: ss.scope.name,
            attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]])),
          })),
        ),
      ),
    );
  return { server, bodies, spans, endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** Starts `mediagate serve` and resolves with its address once it logs that it listens. */
function serve(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(NODE, [CLI, 'serve'], {
    env: { ...env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (d) => (output += d));
    child.stdout!.on('data', (d) => {
      output += d;
      const url = /"msg":"mediagate is listening"/.test(output)
        ? /"url":"([^"]+)"[^\n]*"msg":"mediagate is listening"/.exec(output)?.[1]
        : undefined;
      if (url) resolve({ child, url, output: () => output });
    });
    child.once('exit', (code) => reject(new Error(`serve exited (${code}) before listening:\n${output}`)));
  });
}

describe('traces: OpenTelemetry over OTLP/HTTP', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let dataDir: string;
  let site: FakeSite;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let apiKey: string;
  let rest: { status: number; requestId: string };
  let graphql: { status: number; requestId: string; body: { data?: { parse?: { provider: string } } } };
  let repeatedRequestId: string;
  let exportedBeforeStop: number;
  let exit: { code: number | null; signal: NodeJS.Signals | null };
  let output = '';

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'mediagate-traces-'));
    collector = await startCollector();
    site = await startFakeSite();
    // A video of unknown size: the builtin parser probes it (ffprobe through the loopback relay).
    site.file('/m.mp4', makeMedia({ seconds: 1, video: true, ext: 'mp4' }), 'video/mp4');
    site.page(
      '/watch',
      `<html><head><title>Clip</title><meta property="og:video" content="${site.origin}/m.mp4?token=${MEDIA_TOKEN}"></head></html>`,
    );

    const clientUrl = new URL(db.clientUrl);
    // PostgreSQL's trust authentication ignores a password; the embedded database's gate checks its
    // own. Either must appear nowhere.
    if (db.embedded) dbPassword = decodeURIComponent(clientUrl.password);
    else clientUrl.password = dbPassword;
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      NODE_ENV: 'test',
      API_KEY_PEPPER: PEPPER,
      MEDIAGATE_DATA_DIR: dataDir,
      FETCH_ALLOW_HOSTS: site.hostPort,
      TRANSCRIBE_PROVIDERS: 'openai',
      OPENAI_API_KEY: PROVIDER_KEY,
      DATABASE_URL: clientUrl.toString(),
    };
    const cli = async (...args: string[]) =>
      JSON.parse((await run(NODE, [CLI, '--json', ...args], { env: { ...env, LOG_LEVEL: 'silent' } })).stdout.trim().split('\n').at(-1)!);
    const account = await cli('account', 'create', '--name', 'Tracy', '--credits', '10', '--membership-days', '30');
    apiKey = (await cli('key', 'create', account.id)).key;

    const server = await serve({
      ...env,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_SERVICE_NAME: 'mediagate-traces-test',
      // Nothing leaves on the timer within the test: every span must come out in the flush at stop.
      OTEL_BSP_SCHEDULE_DELAY: '600000',
    });
    try {
      const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
      const r = await fetch(`${server.url}/api/parse`, { method: 'POST', headers, body: JSON.stringify({ url: `${site.origin}/watch` }) });
      await r.text();
      rest = { status: r.status, requestId: r.headers.get('x-request-id')! };
      const query = `mutation { parse(input: { url: "${site.origin}/watch?sig=${INLINE_TOKEN}" }) { id provider credits { charged } } }`;
      const g = await fetch(`${server.url}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query }) });
      graphql = { status: g.status, requestId: g.headers.get('x-request-id')!, body: (await g.json()) as typeof graphql.body };
      // The same document again: without tracing it would now run compiled, outside graphql-js.
      for (let i = 0; i < 2; i++) {
        const again = await fetch(`${server.url}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query }) });
        await again.text();
        repeatedRequestId = again.headers.get('x-request-id')!;
      }
      await fetch(`${server.url}/healthz`).then((h) => h.text());
    } finally {
      exportedBeforeStop = collector.bodies.length;
      const ended = new Promise<typeof exit>((resolve) => server.child.once('exit', (code, signal) => resolve({ code, signal })));
      server.child.kill('SIGTERM');
      exit = await ended;
      output = server.output();
    }
  });
  afterAll(async () => {
    await site?.close();
    await new Promise((resolve) => collector?.server.close(resolve));
    await db?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const traceOf = (requestId: string) => {
    const spans = collector.spans();
    const root = spans.find((s) => s.kind === 2 && s.attributes['mediagate.request_id'] === requestId && !s.parentSpanId);
    if (!root) throw new Error(`no server span names request ${requestId}:\n${output.slice(-3000)}`);
    return { root, spans: spans.filter((s) => s.traceId === root.traceId) };
  };

  it('exports nothing before the stop, everything in the flush at the stop, and exits 0', () => {
    expect(rest.status).toBe(200);
    expect(graphql.status).toBe(200);
    expect(graphql.body.data?.parse?.provider).toBe('builtin');
    expect(exportedBeforeStop).toBe(0);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(collector.spans().length).toBeGreaterThan(10);
  });

  it('follows a REST parse from the door through the ledger statements and the page and media fetches, in one trace', () => {
    const { root, spans } = traceOf(rest.requestId);
    expect(root).toMatchObject({ name: 'POST /api/parse', attributes: { 'http.route': '/api/parse', 'http.response.status_code': 200 } });
    // Fastify's request span carries the request id too, under the server span.
    expect(spans).toContainEqual(
      expect.objectContaining({
        scope: '@fastify/otel',
        parentSpanId: root.spanId,
        attributes: expect.objectContaining({ 'http.route': '/api/parse', 'mediagate.request_id': rest.requestId }),
      }),
    );
    // Every span naming this request is in this trace, and no other trace holds its work.
    for (const s of collector.spans().filter((s) => s.attributes['mediagate.request_id'] === rest.requestId))
      expect(s.traceId).toBe(root.traceId);

    const statements = spans
      .filter((s) => s.scope === '@opentelemetry/instrumentation-pg' && typeof s.attributes['db.query.text'] === 'string')
      .map((s) => s.attributes['db.query.text'] as string);
    expect(statements.some((q) => /update credit_balance (c )?set available = (c\.)?available - /.test(q))).toBe(true); // the hold
    expect(statements.some((q) => /from api_key/.test(q))).toBe(true); // the key lookup
    // MikroORM writes values into the statement text: none survives, the shape does.
    for (const q of statements) expect(q).not.toMatch(/'[^']*'/);

    const fetched = spans
      .filter((s) => s.scope === '@opentelemetry/instrumentation-undici' && s.kind === 3)
      .map((s) => s.attributes['url.full']);
    expect(fetched).toContain(`${site.origin}/watch`);
    // The probe's ranged reads, through the relay ffprobe reads from, belong to the same request.
    expect(fetched).toContain(`${site.origin}/m.mp4?token=REDACTED`);
  });

  it('follows a GraphQL parse the same way, with the GraphQL operation in between', () => {
    const { root, spans } = traceOf(graphql.requestId);
    expect(root.name).toBe('POST /graphql');
    const operations = spans.filter((s) => s.scope === '@opentelemetry/instrumentation-graphql');
    expect(operations).toContainEqual(
      expect.objectContaining({ attributes: expect.objectContaining({ 'graphql.operation.type': 'mutation' }) }),
    );
    expect(operations.map((s) => s.name)).toEqual(expect.arrayContaining(['graphql.parse', 'graphql.validate']));
    expect(
      spans.some((s) => s.scope === '@opentelemetry/instrumentation-pg' && /credit_balance/.test(String(s.attributes['db.query.text']))),
    ).toBe(true);
    expect(
      spans.some(
        (s) =>
          s.scope === '@opentelemetry/instrumentation-undici' && String(s.attributes['url.full']).startsWith(`${site.origin}/watch?sig=`),
      ),
    ).toBe(true);
    // Probes are not traced.
    expect(collector.spans().some((s) => s.attributes['url.path'] === '/healthz')).toBe(false);
  });

  it('keeps the operation span when a document is sent again (with tracing on, documents are not compiled)', () => {
    const { spans } = traceOf(repeatedRequestId);
    const operations = spans.filter((s) => s.scope === '@opentelemetry/instrumentation-graphql');
    expect(operations).toContainEqual(
      expect.objectContaining({ attributes: expect.objectContaining({ 'graphql.operation.type': 'mutation' }) }),
    );
  });

  it('carries no secret in any attribute: no key, no pepper, no provider key, no password, no query value', () => {
    const exported = collector.bodies.join('\n');
    const secretPart = apiKey.split('_').at(-1)!;
    for (const secret of [apiKey, secretPart, PEPPER, PROVIDER_KEY, dbPassword, MEDIA_TOKEN, INLINE_TOKEN])
      expect(exported).not.toContain(secret);
    expect(exported).not.toMatch(/Bearer|authorization/i);
    // The service is named as configured.
    expect(exported).toContain('mediagate-traces-test');
  });

  it('describes the service, the process and the host in every export, as the OpenTelemetry SDK does by default', () => {
    const resources = collector.bodies.flatMap(
      (body) =>
        (JSON.parse(body) as { resourceSpans: { resource: { attributes: { key: string; value: Record<string, unknown> }[] } }[] })
          .resourceSpans,
    );
    expect(resources.length).toBeGreaterThan(0);
    for (const { resource } of resources) {
      const attributes = Object.fromEntries(resource.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
      expect(attributes).toMatchObject({
        'service.name': 'mediagate-traces-test',
        'telemetry.sdk.language': 'nodejs',
        'telemetry.sdk.name': 'opentelemetry',
        'process.runtime.name': 'nodejs',
        'host.name': expect.any(String),
        'host.arch': expect.any(String),
      });
      expect(Number(attributes['process.pid'])).toBeGreaterThan(0);
    }
  });
});
