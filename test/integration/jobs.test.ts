import { randomUUID } from 'node:crypto';
import type { Harness } from '../support/harness.js';
import type { FakeSite } from '../fakes/site.fake.js';
import { startTranscription, transcriptionWorld, type TranscriptionWorld } from '../support/world.js';
import { waitFor } from '../support/wait-for.js';
import { pino } from 'pino';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { OPERATOR } from '../../src/modules/principal.js';
import {
  jobBody,
  type GqlError,
  type JobBody,
  type TranscriptionBody,
  type ErrorBody,
  type ParseBody,
  parseBody,
  transcriptionBody,
} from '../support/bodies.js';

/** The codes of the errors a graphql-ws subscription ended with (its `error` callback gets the GraphQL errors, or an event). */
const codesOf = (e: unknown) => (Array.isArray(e) ? (e as GqlError[]).map((x) => x.extensions?.code) : e);

describe('queued transcriptions (startTranscription, Prefer: respond-async, cancelJob)', () => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;
  beforeAll(async () => {
    world = await transcriptionWorld({
      media: [
        { path: '/talk.mp3', seconds: 75 },
        { path: '/clip.mp4', seconds: 2, video: true },
      ],
      pages: {
        '/watch': { title: 'A talk at the bay', video: { src: '/clip.mp4', type: 'video/mp4; codecs="avc1.42c01f, mp4a.40.2"' } },
      },
    });
    ({ h, site } = world);
    // Media whose download never finishes: the job stays RUNNING until canceled.
    site.endless('/endless.mp3', 'audio/mpeg');
  });
  afterAll(() => world?.close());

  const JOB = `query($id: ID!) { job(id: $id) { id status progress creditsHeld creditsCharged error { code } result } }`;
  type Job = Pick<JobBody<TranscriptionBody>, 'id' | 'status' | 'progress' | 'creditsHeld' | 'creditsCharged' | 'result'> & {
    error: { code: string } | null;
  };
  const untilJob = (key: string, id: string, done: (job: Job) => boolean) =>
    waitFor(
      async () => {
        const job = (await h.gql<{ job: Job }>(JOB, { id }, key)).data.job;
        if (!done(job)) throw new Error(`job ${id} is ${JSON.stringify(job)}`);
        return job;
      },
      { describe: `job ${id} to reach the expected state`, timeout: 15_000, interval: 100 },
    );

  it('queues through GraphQL, holds at once, and charges on success', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const started = await h.gql<{ startTranscription: { id: string; status: string; creditsHeld: number; operation: string } }>(
      `mutation($i: TranscribeInput!) { startTranscription(input: $i) { id status creditsHeld operation } }`,
      { i: { mediaUrl: `${site.origin}/talk.mp3` } },
      key,
    );
    expect(started.errors).toBeUndefined();
    expect(started.data.startTranscription).toMatchObject({ operation: 'TRANSCRIBE', creditsHeld: 1 });
    expect(['QUEUED', 'RUNNING']).toContain(started.data.startTranscription.status);
    const job = await untilJob(key, started.data.startTranscription.id, (j) => j.status === 'SUCCEEDED' || j.status === 'FAILED');
    expect(job).toMatchObject({ status: 'SUCCEEDED', progress: 1, creditsHeld: 0, creditsCharged: 2, error: null });
    expect(job.result?.segments.length).toBeGreaterThan(0);
    expect(await h.balance(accountId)).toEqual({ available: 3, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 3, held: 0 });
  });

  const auth = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });
  /** Polls GET Location, as a REST client does, until the job is where `done` wants it. */
  const poll = async (key: string, location: string, done: (job: JobBody<TranscriptionBody>) => boolean) => {
    // Any answer but 200 ends the polling, and fails below.
    const res = await waitFor(
      async () => {
        const res = await h.request('GET', location, auth(key));
        if (res.statusCode === 200 && !done(jobBody<TranscriptionBody>(res))) throw new Error(`${location} is ${res.body}`);
        return res;
      },
      { describe: `${location} to reach the expected state`, timeout: 15_000, interval: 100 },
    );
    expect(res.statusCode).toBe(200);
    return jobBody<TranscriptionBody>(res);
  };
  const finished = (j: { status: string }) => ['SUCCEEDED', 'FAILED', 'CANCELED'].includes(j.status);

  it('answers Prefer: respond-async with 202, a Location to poll, and the job', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3` }, key, { prefer: 'respond-async' });
    expect(res.statusCode).toBe(202);
    expect(res.headers['preference-applied']).toBe('respond-async');
    const body = jobBody<TranscriptionBody>(res);
    expect(res.headers.location).toBe(`/api/jobs/${body.id}`);
    expect(body).toMatchObject({ status: 'QUEUED', creditsHeld: 1, creditsCharged: 0, result: null });
    const polled = await poll(key, res.headers.location, finished);
    expect(polled).toMatchObject({ id: body.id, status: 'SUCCEEDED', creditsCharged: 2, creditsHeld: 0 });
    // The result is the body the waiting call answers: id, provider, and the credits as at the capture.
    expect(polled.result).toMatchObject({
      id: body.id,
      status: 'SUCCEEDED',
      mediaUrl: `${site.origin}/talk.mp3`,
      provider: 'openai',
      credits: { charged: 2, balance: 3 },
    });
    expect(polled.result?.segments.length).toBeGreaterThan(0);
    expect(await h.balance(accountId)).toEqual({ available: 3, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 3, held: 0 });
    const srt = await h.request('GET', `/api/transcriptions/${body.id}.srt`, { headers: { authorization: `Bearer ${key}` } });
    expect(srt.body).toMatch(/^1\n00:00:00,000 --> /);
  });

  it('cancels a running job: its hold is released, nothing is charged, and a finished job stays as it is', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const id = await startTranscription(h, key, { mediaUrl: `${site.origin}/endless.mp3` });
    await untilJob(key, id, (j) => j.status === 'RUNNING');
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 1 });
    const canceled = await h.gql<{ cancelJob: unknown }>(
      `mutation($id: ID!) { cancelJob(id: $id) { status creditsHeld creditsCharged error { code } } }`,
      { id },
      key,
    );
    expect(canceled.data.cancelJob).toEqual({ status: 'CANCELED', creditsHeld: 0, creditsCharged: 0, error: { code: 'CANCELED' } });
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
    const again = await h.gql<{ cancelJob: { status: string } }>(`mutation($id: ID!) { cancelJob(id: $id) { status } }`, { id }, key);
    expect(again.data.cancelJob.status).toBe('CANCELED');
    expect(await h.ledgerSums(accountId)).toEqual({ available: 5, held: 0 });
    const other = await h.account();
    expect((await h.gql(`mutation($id: ID!) { cancelJob(id: $id) { status } }`, { id }, other.key)).errors?.[0].extensions.code).toBe(
      'NOT_FOUND',
    );
  });

  it('a finished job’s result is exactly the body the waiting call answered, on both doors, with the balance as at its capture', async () => {
    const { key } = await h.account({ credits: 10 });
    const parsed = await h.rest('/api/parse', { url: `${site.origin}/watch` }, key);
    expect(parsed.statusCode).toBe(200);
    expect(parsed.json<ParseBody>().credits).toEqual({ charged: 1, balance: 9 });
    const transcribed = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3` }, key);
    expect(transcribed.statusCode).toBe(200);
    expect(transcribed.json<TranscriptionBody>().credits).toEqual({ charged: 2, balance: 7 });
    // Read after both: the parse's result keeps 9, not today's 7.
    for (const answer of [parseBody(parsed), transcriptionBody(transcribed)]) {
      const rest = await h.request('GET', `/api/jobs/${answer.id}`, auth(key));
      expect(jobBody(rest).result).toEqual(answer);
      const gql = await h.gql<{ job: { result: unknown } }>(`query($id: ID!) { job(id: $id) { result } }`, { id: answer.id }, key);
      expect(gql.data.job.result).toEqual(answer);
    }
  });

  it('cancels over REST as cancelJob does: the job as GET shows it, the hold released, nothing charged; NOT_FOUND for someone else', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const started = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/endless.mp3` }, key, { prefer: 'respond-async' });
    expect(started.statusCode).toBe(202);
    const id = started.json<{ id: string }>().id;
    await poll(key, started.headers.location, (j) => j.status === 'RUNNING');
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 1 });

    // Refusals change nothing, in the contract's error body.
    const stranger = await h.account();
    const theirs = await h.request('POST', `/api/jobs/${id}/cancel`, auth(stranger.key));
    expect(theirs.statusCode).toBe(404);
    expect(theirs.json()).toEqual({ error: { code: 'NOT_FOUND', message: 'No such job.', requestId: theirs.headers['x-request-id'] } });
    const viaGraphql = await h.gql(`mutation($id: ID!) { cancelJob(id: $id) { status } }`, { id }, stranger.key);
    expect(viaGraphql.errors?.[0]).toMatchObject({ message: 'No such job.', extensions: { code: 'NOT_FOUND' } });
    for (const path of [`/api/jobs/${randomUUID()}/cancel`, '/api/jobs/not-a-job/cancel']) {
      const unknown = await h.request('POST', path, auth(key));
      expect([unknown.statusCode, unknown.json<ErrorBody>().error.code]).toEqual([404, 'NOT_FOUND']);
    }
    const anonymous = await h.request('POST', `/api/jobs/${id}/cancel`);
    expect([anonymous.statusCode, anonymous.json<ErrorBody>().error.code]).toEqual([401, 'UNAUTHENTICATED']);
    // A key of the owner's without the scope: FORBIDDEN through both doors, with the same words.
    const parseOnly = (await h.services.apiKeys.create(OPERATOR, accountId, 'parse only', ['parse'])).key;
    const unscoped = await h.request('POST', `/api/jobs/${id}/cancel`, auth(parseOnly));
    expect([unscoped.statusCode, unscoped.json<ErrorBody>().error.code]).toEqual([403, 'FORBIDDEN']);
    const unscopedGql = await h.gql(`mutation($id: ID!) { cancelJob(id: $id) { status } }`, { id }, parseOnly);
    expect(unscopedGql.errors?.[0]).toMatchObject({ message: unscoped.json<ErrorBody>().error.message, extensions: { code: 'FORBIDDEN' } });
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 1 });

    const canceled = await h.request('POST', `/api/jobs/${id}/cancel`, auth(key));
    expect(canceled.statusCode).toBe(200);
    expect(canceled.json()).toMatchObject({
      id,
      status: 'CANCELED',
      creditsHeld: 0,
      creditsCharged: 0,
      result: null,
      error: { code: 'CANCELED', message: 'Canceled by the caller.' },
    });
    expect(canceled.json()).toEqual((await h.request('GET', `/api/jobs/${id}`, auth(key))).json());
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
    // Again: the job as it is, nothing moves.
    const again = await h.request('POST', `/api/jobs/${id}/cancel`, auth(key));
    expect([again.statusCode, again.json()]).toEqual([200, canceled.json()]);
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 5, held: 0 });
  });

  it('canceling a finished job over REST answers it as it is, as cancelJob does: nothing refunded, nothing charged', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const done = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3` }, key);
    expect(done.statusCode).toBe(200);
    const failed = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/gone.mp3` }, key, { prefer: 'respond-async' });
    await poll(key, failed.headers.location, finished);
    for (const id of [done.json<{ id: string }>().id, failed.json<{ id: string }>().id]) {
      const before = jobBody(await h.request('GET', `/api/jobs/${id}`, auth(key)));
      const rest = await h.request('POST', `/api/jobs/${id}/cancel`, auth(key));
      expect([rest.statusCode, rest.json()]).toEqual([200, before]);
      const gql = await h.gql<{ cancelJob: unknown }>(
        `mutation($id: ID!) { cancelJob(id: $id) { id status creditsCharged error { code message } result } }`,
        { id },
        key,
      );
      expect(gql.data.cancelJob).toEqual({
        id,
        status: before.status,
        creditsCharged: before.creditsCharged,
        error: before.error,
        result: before.result,
      });
    }
    expect(transcriptionBody(done).credits).toEqual({ charged: 2, balance: 3 });
    expect((await h.request('GET', `/api/jobs/${done.json<{ id: string }>().id}`, auth(key))).json()).toMatchObject({
      status: 'SUCCEEDED',
      result: done.json(),
    });
    expect((await h.request('GET', `/api/jobs/${failed.json<{ id: string }>().id}`, auth(key))).json()).toMatchObject({
      status: 'FAILED',
      error: { code: 'CONTENT_UNAVAILABLE' },
    });
    expect(await h.balance(accountId)).toEqual({ available: 3, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 3, held: 0 });
  });

  it('streams a job’s changes over the jobUpdated subscription (graphql-ws), ending with its final state', async () => {
    const { key } = await h.account({ credits: 5 });
    const id = await startTranscription(h, key, { mediaUrl: `${site.origin}/talk.mp3` });
    const client = createClient({
      url: `${h.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${key}` },
      retryAttempts: 0,
    });
    const seen: Array<{ status: string; progress: number }> = [];
    try {
      await new Promise<void>((resolve, reject) => {
        client.subscribe(
          { query: `subscription($id: ID!) { jobUpdated(id: $id) { status progress creditsCharged } }`, variables: { id } },
          {
            next: (msg) => void seen.push((msg.data as { jobUpdated: { status: string; progress: number } }).jobUpdated),
            error: reject,
            complete: resolve,
          },
        );
      });
      expect(seen.at(-1)).toEqual({ status: 'SUCCEEDED', progress: 1, creditsCharged: 2 });
      const progress = seen.map((e) => e.progress);
      expect([...progress].sort((a, b) => a - b)).toEqual(progress);
      // Someone else's job, or no key: the subscription fails with the contract's codes.
      const stranger = await h.account();
      const strangerClient = createClient({
        url: `${h.url.replace('http', 'ws')}/graphql`,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${stranger.key}` },
        retryAttempts: 0,
      });
      const codes = await new Promise<unknown>((resolve) => {
        strangerClient.subscribe(
          { query: `subscription($id: ID!) { jobUpdated(id: $id) { status } }`, variables: { id } },
          {
            next: (msg) => resolve(msg.errors?.map((e) => e.extensions?.code)),
            error: (e) => resolve(codesOf(e)),
            complete: () => resolve('completed'),
          },
        );
      });
      expect(codes).toEqual(['NOT_FOUND']);
      // The HTTP door's limits hold on the socket too (here: tokens; repeated fields are valid GraphQL).
      const fields = Array.from({ length: 1100 }, () => 'status').join(' ');
      const limited = await new Promise<unknown>((resolve) => {
        strangerClient.subscribe(
          { query: `subscription($id: ID!) { jobUpdated(id: $id) { ${fields} } }`, variables: { id } },
          {
            next: () => resolve('next'),
            error: (e) => resolve(codesOf(e)),
            complete: () => resolve('completed'),
          },
        );
      });
      expect(limited).toEqual(['INVALID_INPUT']);
      await strangerClient.dispose();
    } finally {
      await client.dispose();
    }
  });

  it('stops the work of a job canceled from elsewhere (another instance wrote CANCELED on its row)', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    let closed = false;
    site.route('/endless-2.mp3', (req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      res.write(Buffer.alloc(1000));
      req.socket.on('close', () => void (closed = true));
    });
    const id = await startTranscription(h, key, { mediaUrl: `${site.origin}/endless-2.mp3` });
    await untilJob(key, id, (j) => j.status === 'RUNNING');
    // Straight to the ledger, as another instance's cancelJob would: this process's runner is not told.
    expect(await h.services.tasks.fail(id, 'CANCELED', 'CANCELED', 'Canceled by the caller.')).toBe(true);
    await waitFor(() => closed, { describe: 'the download to be closed', timeout: 5_000, interval: 20 });
    expect(closed).toBe(true);
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
  });

  it('refuses to queue without credits or membership, holding nothing', async () => {
    const poor = await h.account({ credits: 0 });
    const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3` }, poor.key, { prefer: 'respond-async' });
    expect(res.statusCode).toBe(402);
    const nonMember = await h.account({ member: false });
    const gql = await h.gql(`mutation { startTranscription(input: { mediaUrl: "${site.origin}/talk.mp3" }) { id } }`, {}, nonMember.key);
    expect(gql.errors?.[0].extensions.code).toBe('MEMBERSHIP_REQUIRED');
  });
});

describe('why a queued job failed', () => {
  it('is on the job (error, requestId) and in the log with the request that opened it', async () => {
    const { Writable } = await import('node:stream');
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    });
    const world = await transcriptionWorld({ logger: pino({ level: 'info' }, sink) });
    const { h, site } = world;
    try {
      const { key } = await h.account({ credits: 5 });
      const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/gone.mp3` }, key, {
        prefer: 'respond-async',
        'x-request-id': 'client-req-42',
      });
      expect(res.statusCode).toBe(202);
      expect(res.headers['x-request-id']).toBe('client-req-42');
      const id = res.json<{ id: string }>().id;
      const job = await waitFor(
        async () => {
          const seen = jobBody(await h.request('GET', `/api/jobs/${id}`, { headers: { authorization: `Bearer ${key}` } }));
          if (seen.status !== 'FAILED') throw new Error(`job ${id} is ${JSON.stringify(seen)}`);
          return seen;
        },
        { describe: `job ${id} to fail`, timeout: 10_000, interval: 100 },
      );
      expect(job).toMatchObject({
        status: 'FAILED',
        requestId: 'client-req-42',
        error: { code: 'CONTENT_UNAVAILABLE', message: 'The media URL answered 404.' },
      });
      const logged = lines.find((l) => l.msg === 'task failed' && l.jobId === id);
      expect(logged).toMatchObject({
        requestId: 'client-req-42',
        operation: 'TRANSCRIBE',
        code: 'CONTENT_UNAVAILABLE',
        reason: 'The media URL answered 404.',
      });
    } finally {
      await world.close();
    }
  });
});
