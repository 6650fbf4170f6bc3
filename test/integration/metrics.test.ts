import { createHarness } from '../support/harness.js';
import { startFakeSite } from '../fakes/site.fake.js';

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
});
