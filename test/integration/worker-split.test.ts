import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { JobQueue } from '../../src/modules/jobs/job-queue.js';
import { startWorkers } from '../../src/root.js';
import { startFakeOpenAi } from '../fakes/openai.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, type Harness } from '../support/harness.js';
import { makeMedia } from '../support/media.js';

const run = promisify(execFile);

/** docker-compose.yml's split: a gateway with WORKER_CONCURRENCY=0 queues, a separate worker works. */
describe('a gateway that leaves the queue to separate workers (WORKER_CONCURRENCY=0)', () => {
  let h: Harness;
  let site: FakeSite;
  let openai: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let worker: JobQueue | null = null;
  beforeAll(async () => {
    site = await startFakeSite();
    site.file('/talk.mp3', makeMedia({ seconds: 20 }), 'audio/mpeg');
    openai = await startFakeOpenAi();
    h = await createHarness(
      { FETCH_ALLOW_HOSTS: site.hostPort, TRANSCRIBE_PROVIDERS: 'openai', OPENAI_BASE_URL: openai.baseUrl, WORKER_CONCURRENCY: '0' },
      pino({ level: 'silent' }),
      { queue: true },
    );
  });
  afterAll(async () => {
    await worker?.stop();
    await h?.close();
    await site?.close();
    await openai?.close();
  });

  const JOB = `query($id: ID!) { job(id: $id) { status creditsHeld creditsCharged } }`;

  it('queues without working the job; a worker on the same database finishes it', async () => {
    expect(h.config.workerConcurrency).toBe(0);
    const { key, accountId } = await h.account({ credits: 5 });
    const started = await h.gql(`mutation($i: TranscribeInput!) { startTranscription(input: $i) { id } }`, { i: { mediaUrl: `${site.origin}/talk.mp3` } }, key);
    const id = started.data.startTranscription.id;
    // The queue is polled every second: three polls, and the gateway has not taken the job.
    await new Promise((r) => setTimeout(r, 3000));
    expect((await h.gql(JOB, { id }, key)).data.job).toEqual({ status: 'QUEUED', creditsHeld: 1, creditsCharged: 0 });
    expect(openai.requests.length).toBe(0);

    // What `mediagate worker` starts: its own connection to the queue, and the workers.
    worker = new JobQueue(h.clientUrl, pino({ level: 'silent' }), h.config.webhooks.retryDelaySeconds);
    await worker.start();
    await startWorkers({ ...h.services, config: { ...h.config, workerConcurrency: 1 } }, worker);
    let job: { status: string } = { status: 'QUEUED' };
    for (let i = 0; i < 150 && !['SUCCEEDED', 'FAILED'].includes(job.status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      job = (await h.gql(JOB, { id }, key)).data.job;
    }
    expect(job).toEqual({ status: 'SUCCEEDED', creditsHeld: 0, creditsCharged: 1 });
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 4, held: 0 });
  });
});

describe('mediagate worker', () => {
  it('refuses WORKER_CONCURRENCY=0, which would leave it idle', async () => {
    const NODE = join(process.cwd(), 'node_modules/.bin/node');
    const CLI = join(process.cwd(), 'dist/cli/main.js');
    // Refused before any database is opened (this data directory's parent does not exist).
    const env = { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'silent', API_KEY_PEPPER: 'p'.repeat(40), WORKER_CONCURRENCY: '0', MEDIAGATE_DATA_DIR: join(tmpdir(), 'mediagate-no-such-dir', 'data') };
    const failed = await run(NODE, [CLI, '--json', 'worker'], { env }).then(
      () => null,
      (err: { code: number; stdout: string }) => err,
    );
    expect(failed?.code).toBe(2);
    expect(JSON.parse(failed!.stdout)).toEqual({ error: { code: 'INVALID_CONFIGURATION', message: expect.stringContaining('WORKER_CONCURRENCY') } });
  });
});
