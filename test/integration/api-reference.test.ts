import { validate, compileErrors } from '@readme/openapi-parser';
import type { FastifyInstance, RouteOptions } from 'fastify';
import diagnostics from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { buildOpenApi } from '../../src/docs/openapi.js';
import { ERROR_CATALOGUE, type ErrorCode } from '../../src/errors.js';
import { createHarness, type Harness, type TestResponse } from '../support/harness.js';
import { errorBody } from '../support/bodies.js';

type Example = { value?: unknown; $ref?: string };
type Operation = { responses: Record<string, { content?: Record<string, { examples?: Record<string, Example> }> }> };
type Document = { paths: Record<string, Record<string, Operation>>; components: { examples: Record<string, Example> } };

/** The REST routes the reference must describe: the API, the account area's API, the probes. */
const DOCUMENTED = /^\/(api|account\/api)\/|^\/account\/config\.json$|^\/(healthz|readyz|metrics)$/;

const committed = () => parse(readFileSync(join(process.cwd(), 'schema', 'openapi.yaml'), 'utf8')) as Document;

describe('the REST reference (/docs and schema/openapi.yaml)', () => {
  let h: Harness;
  const routes: { method: string; url: string }[] = [];

  beforeAll(async () => {
    // Fastify announces each new instance here before any route exists, so the hook sees them all.
    const record = (message: unknown) =>
      (message as { fastify: FastifyInstance }).fastify.addHook('onRoute', (route: RouteOptions) => {
        for (const method of [route.method].flat()) routes.push({ method, url: route.url });
      });
    diagnostics.subscribe('fastify.initialization', record);
    try {
      // A loopback address the parse may reach, so a parse gets as far as the credits without the network.
      h = await createHarness({ FETCH_ALLOW_HOSTS: '127.0.0.1:9' });
    } finally {
      diagnostics.unsubscribe('fastify.initialization', record);
    }
  });
  afterAll(async () => {
    await h?.close();
  });

  it('is a valid OpenAPI document', async () => {
    const result = await validate(structuredClone(buildOpenApi()) as never);
    if (!result.valid) throw new Error(compileErrors(result));
    expect(result).toMatchObject({ valid: true, specification: 'OpenAPI' });
  });

  it('describes every route the app serves under /api, /account/api and the probes, with its method', () => {
    const doc = committed();
    const served = routes
      .filter((r) => DOCUMENTED.test(r.url) && r.method !== 'HEAD')
      // The stream route matches its token as a wildcard (no router limit on a parameter's length applies to it).
      .map((r) => `${r.method} ${r.url.replace(/:(\w+)/g, '{$1}').replace(/^\/api\/streams\/\*$/, '/api/streams/{token}')}`);
    const described = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    // The ones the issue names, so that the filter above cannot quietly match nothing.
    expect(served).toEqual(
      expect.arrayContaining([
        'POST /api/parse',
        'POST /api/transcribe',
        'GET /api/jobs/{id}',
        'GET /api/transcriptions/{file}',
        'GET /api/credit-history.csv',
        'GET /api/streams/{token}',
        'GET /healthz',
        'GET /readyz',
        'GET /metrics',
      ]),
    );
    expect(served.filter((r) => !described.includes(r))).toEqual([]);
    expect(described.filter((r) => !served.includes(r))).toEqual([]);
  });

  it('shows an example body of the one error shape for every code of every error status', () => {
    const doc = committed();
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, response] of Object.entries(op.responses)) {
          const examples = response.content?.['application/json']?.examples;
          if (Number(status) < 400 || path === '/readyz') continue;
          const where = `${method.toUpperCase()} ${path} ${status}`;
          expect({ where, codes: Object.keys(examples ?? {}).length > 0 }).toEqual({ where, codes: true });
          for (const [code, example] of Object.entries(examples!)) {
            const { value } = example.$ref ? doc.components.examples[example.$ref.replace('#/components/examples/', '')] : example;
            expect({ where, status: ERROR_CATALOGUE[code as ErrorCode]?.status }).toEqual({ where, status: Number(status) });
            expect(value).toEqual({ error: expect.objectContaining({ code, message: expect.any(String), requestId: expect.any(String) }) });
          }
        }
      }
    }
  });

  it('lists the errors the routes really answer with', async () => {
    const { key } = await h.account({ credits: 0 });
    const auth = { authorization: `Bearer ${key}` };
    const cases: [string, string, Promise<TestResponse>][] = [
      ['/api/parse', 'post', h.rest('/api/parse', { url: 'https://video.example/v' }, null)],
      ['/api/parse', 'post', h.rest('/api/parse', { url: 'ftp://video.example/v' }, key)],
      ['/api/parse', 'post', h.rest('/api/parse', { url: 'http://10.1.2.3/v' }, key)],
      ['/api/parse', 'post', h.rest('/api/parse', { url: 'http://127.0.0.1:9/v' }, key)],
      ['/api/transcribe', 'post', h.rest('/api/transcribe', { mediaUrl: 'https://video.example/v.mp4', language: 'no such' }, key)],
      ['/api/transcribe', 'post', h.request('POST', '/api/transcribe', { headers: { ...auth, 'content-type': 'text/plain' }, body: 'x' })],
      ['/api/jobs/{id}', 'get', h.request('GET', '/api/jobs/5d9c1e0a-7b3f-4f62-8a1d-9e4b2c6f0a13', { headers: auth })],
      [
        '/api/transcriptions/{file}',
        'get',
        h.request('GET', '/api/transcriptions/5d9c1e0a-7b3f-4f62-8a1d-9e4b2c6f0a13.vtt', { headers: auth }),
      ],
      ['/api/credit-history.csv', 'get', h.request('GET', '/api/credit-history.csv?from=yesterday', { headers: auth })],
      [
        '/account/api/session',
        'post',
        h.request('POST', '/account/api/session', {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ token: 'spent' }),
        }),
      ],
    ];
    const doc = committed();
    const seen = [];
    for (const [path, method, answer] of cases) {
      const res = await answer;
      const code = errorBody(res).error.code;
      seen.push(code);
      const examples = doc.paths[path][method].responses[String(res.statusCode)]?.content?.['application/json']?.examples ?? {};
      expect({ path, status: res.statusCode, code, documented: code in examples }).toEqual({
        path,
        status: res.statusCode,
        code,
        documented: true,
      });
    }
    expect(seen).toEqual([
      'UNAUTHENTICATED',
      'INVALID_INPUT',
      'URL_NOT_ALLOWED',
      'INSUFFICIENT_CREDITS',
      'INVALID_INPUT',
      'UNSUPPORTED_MEDIA_TYPE',
      'NOT_FOUND',
      'NOT_FOUND',
      'INVALID_INPUT',
      'UNAUTHENTICATED',
    ]);
  });

  it('serves Swagger UI at /docs, without a key, with every asset from this origin', async () => {
    const res = await h.request('GET', '/docs/', { headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    const assets = [...res.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(assets).toEqual(
      expect.arrayContaining(['./static/swagger-ui-bundle.js', './static/swagger-initializer.js', './static/swagger-ui.css']),
    );
    for (const asset of assets) {
      // Relative to the page: same origin, and served from the installed package.
      expect(asset).not.toMatch(/^(?:[a-z]+:)?\/\//i);
      const got = await h.request('GET', new URL(asset, `${h.url}/docs/`).pathname);
      expect({ asset, status: got.statusCode }).toEqual({ asset, status: 200 });
    }
    // Nothing inline to allow: the page runs its own files only.
    expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i);
    const initializer = await h.request('GET', '/docs/static/swagger-initializer.js');
    expect(initializer.body.replace(/\/\/ .*$/gm, '')).not.toMatch(/https?:\/\//);
    expect(initializer.body).toContain('validatorUrl: null');
    expect((await h.request('GET', '/docs')).statusCode).toBe(200);
  });

  it('gives /docs its own Content Security Policy and leaves the account area’s and the API’s alone', async () => {
    const docs = await h.request('GET', '/docs/static/swagger-ui-bundle.js');
    const page = await h.request('GET', '/docs/');
    for (const res of [docs, page]) {
      const csp = res.headers['content-security-policy'];
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https:|\*/);
    }
    const account = await h.request('GET', '/account/');
    expect(account.headers['content-security-policy']).toMatch(/script-src 'self';/);
    expect(account.headers['content-security-policy']).not.toMatch(/unsafe/);
    const api = await h.request('GET', '/healthz');
    expect(api.headers['content-security-policy']).toBeUndefined();
  });

  it('serves the committed document as JSON at /docs/json', async () => {
    const res = await h.request('GET', '/docs/json');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual(committed());
  });
});
