import { createServer, type AddressInfo } from 'node:net';
import { ConfigError } from '../../src/config.js';
import { createHarness } from '../support/harness.js';
import { startFakeSite } from '../fakes/site.fake.js';
import type { ErrorBody } from '../support/bodies.js';

/** A port free a moment ago. */
const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });

describe('metrics', () => {
  it('serves Prometheus metrics behind METRICS_TOKEN, counting requests, tasks and credits', async () => {
    const site = await startFakeSite();
    site.page(
      '/v',
      '<html><head><meta property="og:video" content="https://cdn.example/v.mp4"><meta property="og:video:type" content="video/mp4"></head></html>',
    );
    const h = await createHarness({ METRICS_TOKEN: 'metrics-token-0123456789', FETCH_ALLOW_HOSTS: site.hostPort });
    try {
      const { key } = await h.account({ credits: 1 });
      expect((await h.rest('/api/parse', { url: `${site.origin}/v` }, key)).statusCode).toBe(200);
      expect((await h.rest('/api/parse', { url: `${site.origin}/missing` }, key)).statusCode).toBe(402);
      expect((await h.request('GET', '/metrics')).statusCode).toBe(401);
      expect((await h.request('GET', '/metrics', { headers: { authorization: 'Bearer wrong-token-0123456789' } })).statusCode).toBe(401);
      const res = await h.request('GET', '/metrics', { headers: { authorization: 'Bearer metrics-token-0123456789' } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.body).toMatch(/mediagate_http_request_duration_seconds_count\{method="POST",route="\/api\/parse",status="200"\} 1/);
      expect(res.body).toMatch(/mediagate_http_request_duration_seconds_count\{method="POST",route="\/api\/parse",status="402"\} 1/);
      expect(res.body).toContain('mediagate_tasks_total{operation="PARSE",outcome="SUCCEEDED"} 1');
      expect(res.body).toContain('mediagate_credits_charged_total{operation="PARSE"} 1');
      expect(res.body).toContain('mediagate_process_cpu_user_seconds_total');
    } finally {
      await h.close();
      await site.close();
    }
  });

  it('with METRICS_PORT, serves /metrics on a listener of its own only, the token asked there too', async () => {
    const port = await freePort();
    const h = await createHarness({ METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1', METRICS_TOKEN: 'metrics-token-0123456789' });
    try {
      const { key } = await h.account();
      expect((await h.gql('{ me { id } }', {}, key)).status).toBe(200);
      // The service's port: no metrics, with or without the token.
      const onService = await h.request('GET', '/metrics', { headers: { authorization: 'Bearer metrics-token-0123456789' } });
      expect([onService.statusCode, onService.json<ErrorBody>().error.code]).toEqual([404, 'NOT_FOUND']);
      const metrics = `http://127.0.0.1:${port}`;
      const open = await fetch(`${metrics}/metrics`);
      expect([open.status, ((await open.json()) as { error: { code: string } }).error.code]).toEqual([401, 'UNAUTHENTICATED']);
      const served = await fetch(`${metrics}/metrics`, { headers: { authorization: 'Bearer metrics-token-0123456789' } });
      expect(served.status).toBe(200);
      expect(await served.text()).toMatch(
        /mediagate_http_request_duration_seconds_count\{method="POST",route="\/graphql",status="200"\} 1/,
      );
      const elsewhere = await fetch(`${metrics}/graphql`);
      expect([elsewhere.status, ((await elsewhere.json()) as { error: { code: string } }).error.code]).toEqual([404, 'NOT_FOUND']);
    } finally {
      await h.close();
    }
    // Closed with the app.
    await expect(fetch(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow();
  });

  it('refuses to start in production with /metrics open on the service port, and starts with either METRICS_TOKEN or METRICS_PORT', async () => {
    const refused = createHarness({ NODE_ENV: 'production', METRICS_TOKEN: '' });
    await expect(refused).rejects.toBeInstanceOf(ConfigError);
    await expect(refused).rejects.toThrow(/METRICS_TOKEN: required when NODE_ENV=production, unless METRICS_PORT serves \/metrics/);
    const settings: Record<string, string>[] = [
      { METRICS_TOKEN: 'metrics-token-0123456789' },
      { METRICS_TOKEN: '', METRICS_PORT: String(await freePort()) },
    ];
    for (const env of settings) {
      const h = await createHarness({ NODE_ENV: 'production', ...env });
      try {
        expect((await h.request('GET', '/metrics')).statusCode).toBe(env.METRICS_TOKEN ? 401 : 404);
      } finally {
        await h.close();
      }
    }
  });
});
