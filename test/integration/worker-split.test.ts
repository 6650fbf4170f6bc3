import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { JobQueue } from '../../src/modules/jobs/job-queue.js';
import { startWorkers } from '../../src/root.js';
import type { FakeSite } from '../fakes/site.fake.js';
import type { Harness } from '../support/harness.js';
import { transcriptionWorld, type TranscriptionWorld } from '../support/world.js';
import { waitFor } from '../support/wait-for.js';

const run = promisify(execFile);

/** docker-compose.yml's split: a gateway with WORKER_CONCURRENCY=0 queues, a separate worker works. */
describe('a gateway that leaves the queue to separate workers (WORKER_CONCURRENCY=0)', () => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;
  let worker: JobQueue | null = null;
  beforeAll(async () => {
    world = await transcriptionWorld({ media: [{ path: '/talk.mp3', seconds: 20 }], env: { WORKER_CONCURRENCY: '0' } });
    ({ h, site } = world);
  });
  afterAll(async () => {
    await worker?.stop();
    await world?.close();
  });

  const JOB = `query($id: ID!) { job(id: $id) { status creditsHeld creditsCharged } }`;

  it('queues without working the job; a worker on the same database finishes it', async () => {
    expect(h.config.workerConcurrency).toBe(0);
    const { key, accountId } = await h.account({ credits: 5 });
    const started = await h.gql<{ startTranscription: { id: string } }>(
      `mutation($i: TranscribeInput!) { startTranscription(input: $i) { id } }`,
      { i: { mediaUrl: `${site.origin}/talk.mp3` } },
      key,
    );
    const id = started.data.startTranscription.id;
    // Proof that the gateway had its chance: each of its workers finished a whole poll that began after
    // the job was queued (a fetch that ended after one that ended after the send). Its workers work
    // webhooks only, and the job is still untouched.
    const queued = Date.now();
    const gatewayWorkers = () => h.queue!.workers();
    const firstPoll = await waitFor(
      () =>
        gatewayWorkers().length > 0 &&
        gatewayWorkers().every((w) => w.lastFetchedOn! > queued) &&
        Math.max(...gatewayWorkers().map((w) => w.lastFetchedOn!)),
      { describe: "the gateway's workers to poll after the job was queued", timeout: 15_000 },
    );
    await waitFor(() => gatewayWorkers().every((w) => w.lastFetchedOn! > firstPoll), {
      describe: "the gateway's workers to poll once more",
      timeout: 15_000,
    });
    expect([...new Set(gatewayWorkers().map((w) => w.queue))]).toEqual(['webhook']);
    expect((await h.gql<{ job: unknown }>(JOB, { id }, key)).data.job).toEqual({ status: 'QUEUED', creditsHeld: 1, creditsCharged: 0 });
    expect(world.openai.requests.length).toBe(0);

    // What `mediagate worker` starts: its own connection to the queue, and the workers; it records the jobs it runs.
    worker = new JobQueue(h.clientUrl, pino({ level: 'silent' }), h.config.webhooks.retryDelaySeconds);
    await worker.start();
    const ranByWorker: string[] = [];
    const transcription = {
      runJob: (jobId: string) => (ranByWorker.push(jobId), h.services.transcription.runJob(jobId)),
    } as typeof h.services.transcription;
    await startWorkers({ ...h.services, transcription, config: { ...h.config, workerConcurrency: 1 } }, worker);
    const job = await waitFor(
      async () => {
        const j = (await h.gql<{ job: { status: string; creditsHeld: number; creditsCharged: number } }>(JOB, { id }, key)).data.job;
        return ['SUCCEEDED', 'FAILED'].includes(j.status) && j;
      },
      { describe: 'the job to finish', timeout: 15_000, interval: 100 },
    );
    expect(ranByWorker).toEqual([id]);
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
    const env = {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      API_KEY_PEPPER: 'p'.repeat(40),
      WORKER_CONCURRENCY: '0',
      MEDIAGATE_DATA_DIR: join(tmpdir(), 'mediagate-no-such-dir', 'data'),
    };
    const failed = await run(NODE, [CLI, '--json', 'worker'], { env }).then(
      () => null,
      (err: { code: number; stdout: string }) => err,
    );
    expect(failed?.code).toBe(2);
    expect(JSON.parse(failed!.stdout)).toEqual({
      error: { code: 'INVALID_CONFIGURATION', message: expect.stringContaining('WORKER_CONCURRENCY') },
    });
  });
});
