import { createHarness, type Harness } from '../support/harness.js';
import { startFakeOpenAi } from '../fakes/openai.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { makeMedia } from '../support/media.js';
import { pino } from 'pino';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

describe('queued transcriptions (startTranscription, Prefer: respond-async, cancelJob)', () => {
  let h: Harness;
  let site: FakeSite;
  let openai: Awaited<ReturnType<typeof startFakeOpenAi>>;
  beforeAll(async () => {
    site = await startFakeSite();
    site.file('/talk.mp3', makeMedia({ seconds: 75 }), 'audio/mpeg');
    // Media whose download never finishes: the job stays RUNNING until canceled.
    site.route('/endless.mp3', (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      res.write(Buffer.alloc(1000));
    });
    openai = await startFakeOpenAi();
    h = await createHarness(
      { FETCH_ALLOW_HOSTS: site.hostPort, TRANSCRIBE_PROVIDERS: 'openai', OPENAI_BASE_URL: openai.baseUrl },
      pino({ level: 'silent' }),
      { queue: true },
    );
  });
  afterAll(async () => {
    await h.close();
    await site.close();
    await openai.close();
  });

  const JOB = `query($id: ID!) { job(id: $id) { id status progress creditsHeld creditsCharged error { code } result } }`;
  const waitFor = async (key: string, id: string, done: (job: any) => boolean) => {
    for (let i = 0; i < 150; i++) {
      const job = (await h.gql(JOB, { id }, key)).data.job;
      if (done(job)) return job;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`job ${id} did not reach the expected state`);
  };

  it('queues through GraphQL, holds at once, and charges on success', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const started = await h.gql(`mutation($i: TranscribeInput!) { startTranscription(input: $i) { id status creditsHeld operation } }`, { i: { mediaUrl: `${site.origin}/talk.mp3` } }, key);
    expect(started.errors).toBeUndefined();
    expect(started.data.startTranscription).toMatchObject({ operation: 'TRANSCRIBE', creditsHeld: 1 });
    expect(['QUEUED', 'RUNNING']).toContain(started.data.startTranscription.status);
    const job = await waitFor(key, started.data.startTranscription.id, (j) => j.status === 'SUCCEEDED' || j.status === 'FAILED');
    expect(job).toMatchObject({ status: 'SUCCEEDED', progress: 1, creditsHeld: 0, creditsCharged: 2, error: null });
    expect(job.result.segments.length).toBeGreaterThan(0);
    expect(await h.balance(accountId)).toEqual({ available: 3, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 3, held: 0 });
  });

  it('answers Prefer: respond-async with 202, a Location to poll, and the job', async () => {
    const { key } = await h.account({ credits: 5 });
    const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/talk.mp3` }, key, { prefer: 'respond-async' });
    expect(res.statusCode).toBe(202);
    expect(res.headers['preference-applied']).toBe('respond-async');
    const body = res.json();
    expect(res.headers.location).toBe(`/api/jobs/${body.id}`);
    await waitFor(key, body.id, (j) => j.status === 'SUCCEEDED');
    const polled = await h.request('GET', res.headers.location, { headers: { authorization: `Bearer ${key}` } });
    expect(polled.json()).toMatchObject({ id: body.id, status: 'SUCCEEDED', creditsCharged: 2 });
    const srt = await h.request('GET', `/api/transcriptions/${body.id}.srt`, { headers: { authorization: `Bearer ${key}` } });
    expect(srt.body).toMatch(/^1\n00:00:00,000 --> /);
  });

  it('cancels a running job: its hold is released, nothing is charged, and a finished job stays as it is', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const started = await h.gql(`mutation($i: TranscribeInput!) { startTranscription(input: $i) { id } }`, { i: { mediaUrl: `${site.origin}/endless.mp3` } }, key);
    const id = started.data.startTranscription.id;
    await waitFor(key, id, (j) => j.status === 'RUNNING');
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 1 });
    const canceled = await h.gql(`mutation($id: ID!) { cancelJob(id: $id) { status creditsHeld creditsCharged error { code } } }`, { id }, key);
    expect(canceled.data.cancelJob).toEqual({ status: 'CANCELED', creditsHeld: 0, creditsCharged: 0, error: { code: 'CANCELED' } });
    expect(await h.balance(accountId)).toEqual({ available: 5, held: 0 });
    const again = await h.gql(`mutation($id: ID!) { cancelJob(id: $id) { status } }`, { id }, key);
    expect(again.data.cancelJob.status).toBe('CANCELED');
    expect(await h.ledgerSums(accountId)).toEqual({ available: 5, held: 0 });
    const other = await h.account();
    expect((await h.gql(`mutation($id: ID!) { cancelJob(id: $id) { status } }`, { id }, other.key)).errors?.[0].extensions.code).toBe('NOT_FOUND');
  });

  it('streams a job’s changes over the jobUpdated subscription (graphql-ws), ending with its final state', async () => {
    const { key } = await h.account({ credits: 5 });
    const id = (await h.gql(`mutation($i: TranscribeInput!) { startTranscription(input: $i) { id } }`, { i: { mediaUrl: `${site.origin}/talk.mp3` } }, key)).data.startTranscription.id;
    const client = createClient({ url: h.url.replace('http', 'ws') + '/graphql', webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${key}` }, retryAttempts: 0 });
    const seen: Array<{ status: string; progress: number }> = [];
    try {
      await new Promise<void>((resolve, reject) => {
        client.subscribe(
          { query: `subscription($id: ID!) { jobUpdated(id: $id) { status progress creditsCharged } }`, variables: { id } },
          { next: (msg) => void seen.push((msg.data as any).jobUpdated), error: reject, complete: resolve },
        );
      });
      expect(seen.at(-1)).toEqual({ status: 'SUCCEEDED', progress: 1, creditsCharged: 2 });
      const progress = seen.map((e) => e.progress);
      expect([...progress].sort((a, b) => a - b)).toEqual(progress);
      // Someone else's job, or no key: the subscription fails with the contract's codes.
      const stranger = await h.account();
      const strangerClient = createClient({ url: h.url.replace('http', 'ws') + '/graphql', webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${stranger.key}` }, retryAttempts: 0 });
      const codes = await new Promise<unknown>((resolve) => {
        strangerClient.subscribe(
          { query: `subscription($id: ID!) { jobUpdated(id: $id) { status } }`, variables: { id } },
          { next: (msg) => resolve(msg.errors?.map((e) => e.extensions?.code)), error: (e) => resolve((e as any[]).map?.((x) => x.extensions?.code) ?? e), complete: () => resolve('completed') },
        );
      });
      expect(codes).toEqual(['NOT_FOUND']);
      // The HTTP door's limits hold on the socket too (here: tokens; repeated fields are valid GraphQL).
      const fields = Array.from({ length: 1100 }, () => 'status').join(' ');
      const limited = await new Promise<unknown>((resolve) => {
        strangerClient.subscribe(
          { query: `subscription($id: ID!) { jobUpdated(id: $id) { ${fields} } }`, variables: { id } },
          { next: () => resolve('next'), error: (e) => resolve((e as any[]).map?.((x) => x.extensions?.code) ?? e), complete: () => resolve('completed') },
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
    const id = (await h.gql(`mutation($i: TranscribeInput!) { startTranscription(input: $i) { id } }`, { i: { mediaUrl: `${site.origin}/endless-2.mp3` } }, key)).data.startTranscription.id;
    await waitFor(key, id, (j) => j.status === 'RUNNING');
    // Straight to the ledger, as another instance's cancelJob would: this process's runner is not told.
    expect(await h.services.ledger.fail(id, 'CANCELED', 'CANCELED', 'Canceled by the caller.')).toBe(true);
    for (let i = 0; i < 50 && !closed; i++) await new Promise((r) => setTimeout(r, 100));
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
    const site = await startFakeSite();
    const openai = await startFakeOpenAi();
    const h = await createHarness(
      { FETCH_ALLOW_HOSTS: site.hostPort, TRANSCRIBE_PROVIDERS: 'openai', OPENAI_BASE_URL: openai.baseUrl },
      pino({ level: 'info' }, sink),
      { queue: true },
    );
    try {
      const { key } = await h.account({ credits: 5 });
      const res = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/gone.mp3` }, key, { prefer: 'respond-async', 'x-request-id': 'client-req-42' });
      expect(res.statusCode).toBe(202);
      expect(res.headers['x-request-id']).toBe('client-req-42');
      const id = res.json().id;
      let job: any;
      for (let i = 0; i < 100; i++) {
        job = (await h.request('GET', `/api/jobs/${id}`, { headers: { authorization: `Bearer ${key}` } })).json();
        if (job.status === 'FAILED') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(job).toMatchObject({ status: 'FAILED', requestId: 'client-req-42', error: { code: 'CONTENT_UNAVAILABLE', message: 'The media URL answered 404.' } });
      const logged = lines.find((l) => l.msg === 'task failed' && l.jobId === id);
      expect(logged).toMatchObject({ requestId: 'client-req-42', operation: 'TRANSCRIBE', code: 'CONTENT_UNAVAILABLE', reason: 'The media URL answered 404.' });
    } finally {
      await h.close();
      await site.close();
      await openai.close();
    }
  });
});
