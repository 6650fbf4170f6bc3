import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, type Harness } from '../support/harness.js';
import type { ErrorBody, GqlBody } from '../support/bodies.js';

/**
 * A caller's URL that cannot be fetched (no such host, nothing listening, the connection cut, the
 * server failing or saying the page is gone): the contract's code, a message that says why in the
 * gateway's own words (never the server's text), nothing charged, through both doors.
 */
describe('URLs that cannot be fetched say why', () => {
  let h: Harness;
  let site: FakeSite;
  let closedPort: number;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    site = await startFakeSite();
    site.route(
      '/p/500',
      (_req, res) => void res.writeHead(500, { 'content-type': 'text/html' }).end('<h1>upstream-secret-text: database down</h1>'),
    );
    site.route(
      '/p/gone',
      (_req, res) => void res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>upstream-secret-text: no such video</h1>'),
    );
    site.route('/p/cut', (req) => req.socket.destroy());
    // A port on loopback with nothing listening: allowed below, so the connection is tried and refused.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    closedPort = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    h = await createHarness({ FETCH_ALLOW_HOSTS: `${site.hostPort},127.0.0.1:${closedPort}` });
    ({ key, accountId } = await h.account({ credits: 5 }));
  });
  afterAll(async () => {
    await h?.close();
    await site?.close();
  });

  /** The error a door answers for a parse of `url`: its status (GraphQL's mapped as REST's) and message. */
  const parse = async (door: 'rest' | 'graphql', url: string) => {
    if (door === 'rest') {
      const res = await h.rest('/api/parse', { url }, key);
      return {
        status: res.statusCode,
        code: res.json<ErrorBody>().error?.code,
        message: String(res.json<ErrorBody>().error?.message),
        body: res.body,
      };
    }
    const res = await h.request('POST', '/graphql', {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: 'mutation($url: String!) { parse(input: { url: $url }) { id } }', variables: { url } }),
    });
    const error = res.json<GqlBody>().errors?.[0];
    return { status: res.statusCode, code: error?.extensions.code, message: String(error?.message), body: res.body };
  };

  const cases: Array<[string, () => string, string, RegExp]> = [
    [
      'a host name that does not resolve',
      () => 'http://nothing.invalid/watch/1',
      'PROVIDER_ERROR',
      /^Every configured provider failed\. builtin: the page could not be fetched \(its host name could not be resolved\)\.$/,
    ],
    [
      'a port nothing listens on',
      () => `http://127.0.0.1:${closedPort}/watch/1`,
      'PROVIDER_ERROR',
      /\(the server refused the connection\)\.$/,
    ],
    ['a server that cuts the connection', () => `${site.origin}/p/cut`, 'PROVIDER_ERROR', /\(the server closed the connection\)\.$/],
    ['a server failing with 500', () => `${site.origin}/p/500`, 'PROVIDER_ERROR', /\(the server answered 500\)\.$/],
    [
      'a page that is gone (404)',
      () => `${site.origin}/p/gone`,
      'CONTENT_UNAVAILABLE',
      /^The media exists but cannot be retrieved .*\. builtin: the page could not be fetched \(the server answered 404\)\.$/,
    ],
  ];

  it.each(cases)('%s: the code, the reason, nothing charged, on both doors', async (_what, url, code, message) => {
    for (const door of ['rest', 'graphql'] as const) {
      const answer = await parse(door, url());
      expect({ door, code: answer.code, message: answer.message }).toEqual({ door, code, message: expect.stringMatching(message) });
      if (door === 'rest') expect(answer.status).toBe(code === 'PROVIDER_ERROR' ? 502 : 422);
      expect(answer.body).not.toContain('upstream-secret-text');
    }
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 5, held: 0 });
  });

  it('a transcription whose media host does not resolve: 422 CONTENT_UNAVAILABLE saying so, nothing charged', async () => {
    const rest = await h.rest('/api/transcribe', { mediaUrl: 'http://nothing.invalid/talk.mp3' }, key);
    expect(rest.statusCode).toBe(422);
    expect(rest.json<ErrorBody>().error).toMatchObject({
      code: 'CONTENT_UNAVAILABLE',
      message: 'The media could not be downloaded: its host name could not be resolved.',
    });
    const gql = await h.gql('mutation { transcribe(input: { mediaUrl: "http://nothing.invalid/talk.mp3" }) { id } }', {}, key);
    expect(gql.errors?.[0]).toMatchObject({
      message: 'The media could not be downloaded: its host name could not be resolved.',
      extensions: { code: 'CONTENT_UNAVAILABLE' },
    });
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
  });
});
