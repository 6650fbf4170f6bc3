import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHarness, type Harness } from '../support/harness.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import type { ErrorBody } from '../support/bodies.js';

/** User URLs are hostile: none of these may open a connection, and none may cost a credit. */
describe('outgoing requests through the API', () => {
  let h: Harness;
  let allowed: FakeSite;
  let target: FakeSite;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    allowed = await startFakeSite();
    target = await startFakeSite();
    target.page('/secret', '<html><head><meta property="og:video" content="http://127.0.0.1/x.mp4"></head></html>');
    allowed.route('/hop', (_req, res) => void res.writeHead(302, { location: `${target.origin}/secret` }).end());
    h = await createHarness({ FETCH_ALLOW_HOSTS: allowed.hostPort });
    ({ key, accountId } = await h.account({ credits: 5 }));
  });
  afterAll(async () => {
    await h.close();
    await allowed.close();
    await target.close();
  });

  const port = () => new URL(target.origin).port;

  it.each([
    ['loopback outside the allow list', () => `${target.origin}/secret`],
    ['the cloud metadata address', () => 'http://169.254.169.254/latest/meta-data/'],
    ['an IPv4-mapped IPv6 loopback', () => `http://[::ffff:127.0.0.1]:${port()}/secret`],
    ['a decimal IP', () => `http://2130706433:${port()}/secret`],
    ['localhost by name', () => `http://localhost:${port()}/secret`],
  ])('refuses %s with 422 URL_NOT_ALLOWED', async (_label, url) => {
    const before = target.connections;
    const res = await h.rest('/api/parse', { url: url() }, key);
    expect(res.statusCode).toBe(422);
    expect(res.json<ErrorBody>().error.code).toBe('URL_NOT_ALLOWED');
    expect(target.connections).toBe(before);
    const t = await h.rest('/api/transcribe', { mediaUrl: url() }, key);
    expect(t.statusCode).toBe(422);
    expect(t.json<ErrorBody>().error.code).toBe('URL_NOT_ALLOWED');
    expect(target.connections).toBe(before);
  });

  it('refuses a redirect from an allowed host to loopback, and the target sees no connection', async () => {
    const before = target.connections;
    const res = await h.rest('/api/parse', { url: `${allowed.origin}/hop` }, key);
    expect(res.statusCode).toBe(422);
    expect(res.json<ErrorBody>().error.code).toBe('URL_NOT_ALLOWED');
    expect(allowed.hits).toContain('GET /hop');
    expect(target.connections).toBe(before);
  });

  it('charged nothing for any refusal', async () => {
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 5, held: 0 });
  });

  it('never reaches a server bound to another loopback address either', async () => {
    const server = createServer((_req, res) => res.end('x'));
    let connections = 0;
    server.on('connection', () => void connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.2', r));
    const { port: p } = server.address() as AddressInfo;
    const res = await h.rest('/api/parse', { url: `http://127.0.0.2:${p}/` }, key);
    expect(res.json<ErrorBody>().error.code).toBe('URL_NOT_ALLOWED');
    expect(connections).toBe(0);
    await new Promise<void>((r) => server.close(() => r()));
  });
});
