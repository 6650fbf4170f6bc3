import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FakeSite } from '../fakes/site.fake.js';
import type { Harness } from '../support/harness.js';
import { transcriptionWorld, type TranscriptionWorld } from '../support/world.js';
import { waitFor } from '../support/wait-for.js';
import { OPERATOR } from '../../src/modules/principal.js';
import { type GqlError, type ErrorBody, type SessionBody, jobBody, type GqlBody } from '../support/bodies.js';

const EMAIL = 'ada.scopes@example.org';

/**
 * Keys with fewer scopes, through both doors over HTTP: what each scope lets a key see and change
 * (the rules themselves are walked field by field in test/unit/graphql-scopes.test.ts).
 */
describe('API key scopes through the doors', () => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;
  let receiver: Server;
  let receiverOrigin: string;
  /** Whether the endless download of each path is still open: the job's work goes on. */
  const downloading = new Map<string, boolean>();

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const { port } = receiver.address() as AddressInfo;
    receiverOrigin = `http://127.0.0.1:${port}`;
    world = await transcriptionWorld({ media: [{ path: '/talk.mp3', seconds: 5 }], allowHosts: [`127.0.0.1:${port}`] });
    ({ h, site } = world);
  }, 60_000);
  afterAll(async () => {
    await world?.close();
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  });

  /** Media whose download never finishes: a job on it stays RUNNING until canceled. */
  const endless = (path: string) => {
    site.route(path, (req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      res.write(Buffer.alloc(1000));
      downloading.set(path, true);
      req.socket.on('close', () => downloading.set(path, false));
    });
    return `${site.origin}${path}`;
  };

  /** An account with an email, a membership and credits, and one key per scope set asked for. */
  const accountWithKeys = async <K extends string>(keys: Record<K, string[]>) => {
    const account = await h.services.accounts.create(OPERATOR, { name: 'Ada', email: EMAIL, credits: 5, membershipDays: 30 });
    const made = {} as Record<K, string>;
    for (const [name, scopes] of Object.entries(keys) as [K, string[]][])
      made[name] = (await h.services.apiKeys.create(OPERATOR, account.id, name, scopes)).key;
    return { accountId: account.id, keys: made };
  };

  const until = <T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 20_000) =>
    waitFor(probe, { describe: what, timeout: ms, interval: 100 }) as Promise<T>;
  const jobStatus = async (id: string, readKey: string) =>
    (await h.gql<{ job: { status: string } }>(`query($id: ID!) { job(id: $id) { status } }`, { id }, readKey)).data.job.status as string;

  const START = `mutation($i: TranscribeInput!, $k: String) {
    startTranscription(input: $i, idempotencyKey: $k) {
      id status creditsHeld
      account { id email membership { active } credits { available held } }
      webhook { url attempts { attempt statusCode eventType } }
    }
  }`;

  it('startTranscription with a transcribe-only key: the job, but its account and webhook are FORBIDDEN and nothing of them leaks', async () => {
    const { accountId, keys } = await accountWithKeys({ transcribe: ['transcribe'], read: ['read'] });
    const input = { mediaUrl: `${site.origin}/talk.mp3`, webhookUrl: `${receiverOrigin}/hook` };
    const res = await h.request('POST', '/graphql', {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.transcribe}` },
      body: JSON.stringify({ query: START, variables: { i: input, k: 'scopes-1' } }),
    });
    expect(res.statusCode).toBe(200);
    const body = res.json<{ data: { startTranscription: { id: string } }; errors: (GqlError & { path: string[] })[] }>();
    expect(body.data.startTranscription).toEqual({
      id: expect.any(String),
      status: expect.stringMatching(/^(QUEUED|RUNNING)$/),
      creditsHeld: 1,
      account: null,
      webhook: null,
    });
    expect(body.errors.map((e) => [e.path.join('.'), e.extensions.code]).sort()).toEqual([
      ['startTranscription.account', 'FORBIDDEN'],
      ['startTranscription.webhook', 'FORBIDDEN'],
    ]);
    expect(body.errors[0].message).toBe('This API key lacks the "read" scope.');
    expect(res.body).not.toContain(EMAIL);
    expect(res.body).not.toContain(accountId);
    expect(res.body).not.toMatch(/"available"|"membership"|"attempts"/);
    const id = body.data.startTranscription.id;

    // Once the job ended and its webhook was delivered, a replay (same idempotency key) shows the same job, still without them.
    await until(
      'the delivery',
      async () =>
        (
          await h.gql<{ job: { webhook: { attempts: { statusCode: number }[] } } }>(
            `query($id: ID!) { job(id: $id) { webhook { attempts { statusCode } } } }`,
            { id },
            keys.read,
          )
        ).data.job.webhook.attempts[0],
    );
    const replay = await h.gql<{ startTranscription: unknown }>(START, { i: input, k: 'scopes-1' }, keys.transcribe);
    expect(replay.data.startTranscription).toMatchObject({ id, status: 'SUCCEEDED', account: null, webhook: null });
    expect(replay.errors?.map((e) => e.extensions.code)).toEqual(['FORBIDDEN', 'FORBIDDEN']);
    // REST's 202 for the same replay: the job, with no delivery attempt listed to a key without read.
    const rest = await h.rest('/api/transcribe', input, keys.transcribe, { prefer: 'respond-async', 'idempotency-key': 'scopes-1' });
    expect(rest.statusCode).toBe(202);
    expect(rest.json()).toMatchObject({ id, status: 'SUCCEEDED', webhook: { url: input.webhookUrl, attempts: [] } });
    // GET /api/jobs/{id} needs read, as before: refused to the transcribe key, the attempts shown to the read key.
    const refused = await h.request('GET', `/api/jobs/${id}`, { headers: { authorization: `Bearer ${keys.transcribe}` } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json<ErrorBody>().error).toMatchObject({ code: 'FORBIDDEN', message: 'This API key lacks the "read" scope.' });
    const polled = await h.request('GET', `/api/jobs/${id}`, { headers: { authorization: `Bearer ${keys.read}` } });
    expect(polled.statusCode).toBe(200);
    expect(jobBody(polled).webhook).toEqual({
      url: input.webhookUrl,
      attempts: [expect.objectContaining({ attempt: 1, statusCode: 204, eventType: 'job.succeeded' })],
    });
    // With read, GraphQL shows the account and the webhook of the same job.
    const read = await h.gql<{ job: unknown }>(
      `query($id: ID!) { job(id: $id) { account { email credits { held } } webhook { attempts { statusCode } } } }`,
      { id },
      keys.read,
    );
    expect(read.errors).toBeUndefined();
    expect(read.data.job).toEqual({ account: { email: EMAIL, credits: { held: 0 } }, webhook: { attempts: [{ statusCode: 204 }] } });
  });

  it('a key with every scope (the default) sees the account and the webhook of the job it starts', async () => {
    const { accountId, keys } = await accountWithKeys({ all: [] });
    const started = await h.gql<{ startTranscription: { id: string } }>(
      START,
      { i: { mediaUrl: endless('/endless-all.mp3'), webhookUrl: `${receiverOrigin}/hook-all` } },
      keys.all,
    );
    expect(started.errors).toBeUndefined();
    expect(started.data.startTranscription).toMatchObject({
      account: { id: accountId, email: EMAIL, membership: { active: true }, credits: { available: 4, held: 1 } },
      webhook: { url: `${receiverOrigin}/hook-all`, attempts: [] },
    });
    expect(
      (
        await h.gql<{ cancelJob: { status: string } }>(
          `mutation($id: ID!) { cancelJob(id: $id) { status } }`,
          { id: started.data.startTranscription.id },
          keys.all,
        )
      ).data.cancelJob.status,
    ).toBe('CANCELED');
  });

  it('cancelJob needs the transcribe scope: a read-only key is FORBIDDEN and the job runs on, its hold still held; a transcribe key cancels and releases it', async () => {
    const { accountId, keys } = await accountWithKeys({ transcribe: ['transcribe'], read: ['read'] });
    const media = endless('/endless-cancel.mp3');
    const started = await h.gql<{ startTranscription: { id: string } }>(
      `mutation($i: TranscribeInput!) { startTranscription(input: $i) { id } }`,
      { i: { mediaUrl: media } },
      keys.transcribe,
    );
    const id = started.data.startTranscription.id;
    await until('the job to run', async () => (await jobStatus(id, keys.read)) === 'RUNNING' && downloading.get('/endless-cancel.mp3'));
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 1 });

    const refused = await h.gql(`mutation($id: ID!) { cancelJob(id: $id) { id status } }`, { id }, keys.read);
    expect(refused.status).toBe(200);
    expect(refused.data).toBeNull();
    expect(refused.errors).toEqual([
      expect.objectContaining({
        path: ['cancelJob'],
        message: 'This API key lacks the "transcribe" scope.',
        extensions: { code: 'FORBIDDEN' },
      }),
    ]);
    expect(await jobStatus(id, keys.read)).toBe('RUNNING');
    expect(downloading.get('/endless-cancel.mp3')).toBe(true);
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 1 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 4, held: 1 });

    const canceled = await h.gql<{ cancelJob: unknown }>(
      `mutation($id: ID!) { cancelJob(id: $id) { status creditsHeld creditsCharged error { code } } }`,
      { id },
      keys.transcribe,
    );
    expect(canceled.errors).toBeUndefined();
    expect(canceled.data.cancelJob).toEqual({ status: 'CANCELED', creditsHeld: 0, creditsCharged: 0, error: { code: 'CANCELED' } });
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 5, held: 0 });
    await until('the download to stop', async () => downloading.get('/endless-cancel.mp3') === false);
  });

  it('the scope is checked before the input, alike on both doors', async () => {
    const { keys } = await accountWithKeys({ read: ['read'] });
    const bad = { mediaUrl: 42 };
    const rest = await h.rest('/api/transcribe', bad, keys.read);
    expect(rest.statusCode).toBe(403);
    expect(rest.json<ErrorBody>().error).toMatchObject({ code: 'FORBIDDEN', message: 'This API key lacks the "transcribe" scope.' });
    const parse = await h.rest('/api/parse', { url: 7 }, keys.read);
    expect(parse.statusCode).toBe(403);
    expect(parse.json<ErrorBody>().error.message).toBe('This API key lacks the "parse" scope.');
    const gql = await h.gql(`mutation { transcribe(input: { mediaUrl: "not a url" }) { id } }`, {}, keys.read);
    expect(gql.errors?.[0]).toMatchObject({ message: 'This API key lacks the "transcribe" scope.', extensions: { code: 'FORBIDDEN' } });
  });

  it('an account-area session holds every scope, as before: it sees the account and webhook of its job and may cancel it', async () => {
    const account = await h.services.accounts.create(OPERATOR, { name: 'Ada', email: EMAIL, credits: 5, membershipDays: 30 });
    const link = await h.services.sessions.createLoginLink(OPERATOR, account.id);
    const token = /#login=([A-Za-z0-9_-]+)$/.exec(link.url)![1];
    const session = await h.request('POST', '/account/api/session', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    });
    const headers = {
      'content-type': 'application/json',
      cookie: session.headers['set-cookie'].split(';')[0],
      'x-csrf-token': session.json<SessionBody>().csrfToken,
    };
    const gql = async <T>(query: string, variables: Record<string, unknown>) =>
      (await h.request('POST', '/graphql', { headers, body: JSON.stringify({ query, variables }) })).json<GqlBody<T>>();
    const started = await gql<{ startTranscription: { id: string } }>(START, {
      i: { mediaUrl: endless('/endless-session.mp3'), webhookUrl: `${receiverOrigin}/hook-session` },
    });
    expect(started.errors).toBeUndefined();
    expect(started.data.startTranscription).toMatchObject({
      account: { email: EMAIL, credits: { held: 1 } },
      webhook: { url: `${receiverOrigin}/hook-session` },
    });
    const canceled = await gql(`mutation($id: ID!) { cancelJob(id: $id) { status } }`, { id: started.data.startTranscription.id });
    expect(canceled).toEqual({ data: { cancelJob: { status: 'CANCELED' } } });
    expect(await h.balance(account.id)).toEqual({ available: 5, held: 0 });
  });
});
