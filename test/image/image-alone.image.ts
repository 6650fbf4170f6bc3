import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import pg from 'pg';
import { serveBytes, startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { waitFor } from '../support/wait-for.js';
import { IMAGE, cliIn, curl, docker, expectStatus, freePort, healthOf, logsOf, makeCheckMedia, must, run } from './docker.js';
import type { TranscriptionBody } from '../support/bodies.js';

// The image alone, as an operator runs it beside an existing PostgreSQL and Redis (here this
// machine's, through the host's network): non-root, read-only, with /tmp and the data directory
// on tmpfs. Every request goes in with curl, as a caller's would.

const ADMIN_URL = process.env.IMAGE_CHECK_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.IMAGE_CHECK_REDIS_URL ?? 'redis://127.0.0.1:6379';
const suffix = randomBytes(4).toString('hex');
const database = `mg_image_check_${suffix}`;
const container = `mediagate-image-check-${suffix}`;

let site: FakeSite;
let base: string;
let key: string;
/** Requests for /held.m4a wait here until the test lets them through. */
const held: (() => void)[] = [];
let releaseHeld = false;

/** A connection to the server's `postgres` database, or to `db`, for the length of `work`. */
async function admin<T>(work: (client: pg.Client) => Promise<T>, db?: string): Promise<T> {
  const client = new pg.Client({ connectionString: db ? ADMIN_URL.replace(/\/[^/]*$/, `/${db}`) : ADMIN_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const authorized = () => ({ authorization: `Bearer ${key}` });

beforeAll(async () => {
  const media = makeCheckMedia();
  site = await startFakeSite();
  site.file('/clip.mp4', media.video, 'video/mp4');
  site.file('/hello.m4a', media.speech, 'audio/mp4');
  site.route('/held.m4a', (req: IncomingMessage, res: ServerResponse) => {
    const answer = () => serveBytes(req, res, media.speech, 'audio/mp4');
    if (releaseHeld) answer();
    else held.push(answer);
  });
  await admin((c) => c.query(`create database ${database}`));
  const port = await freePort();
  const metricsPort = await freePort();
  base = `http://127.0.0.1:${port}`;
  const pepper = randomBytes(32).toString('base64url');
  await docker(
    ...['run', '-d', '--name', container, '--init', '--network', 'host'],
    ...['--read-only', '--tmpfs', '/tmp:rw,mode=1777', '--tmpfs', '/var/lib/mediagate:rw,uid=1000,gid=1000,mode=0700'],
    ...['-e', `API_KEY_PEPPER=${pepper}`, '-e', `DATABASE_URL=${ADMIN_URL.replace(/\/[^/]*$/, `/${database}`)}`],
    ...['-e', `REDIS_URL=${REDIS_URL}`, '-e', 'HOST=127.0.0.1', '-e', `PORT=${port}`, '-e', `PUBLIC_URL=${base}`],
    ...['-e', `FETCH_ALLOW_HOSTS=${site.hostPort}`, '-e', 'PARSE_PROVIDERS=builtin', '-e', 'TRANSCRIBE_PROVIDERS=local'],
    // The drain waits for the transcription in flight; on a busy shared machine PocketSphinx alone may
    // take longer than the default 30 s.
    ...['-e', 'SHUTDOWN_GRACE_SECONDS=300'],
    // Production needs /metrics guarded: here it is served on a port of its own, as the compose
    // stack and the Kubernetes manifests do.
    ...['-e', `METRICS_PORT=${metricsPort}`, '-e', 'METRICS_HOST=127.0.0.1'],
    IMAGE,
  );
  // The image's HEALTHCHECK asks /readyz every 10 s once the server has migrated and listens.
  await waitFor(
    async () => {
      const health = await healthOf(container);
      if (health === 'exited' || health === 'dead' || health === 'unhealthy')
        throw new Error(`the container is ${health}:\n${(await logsOf(container)).slice(-4000)}`);
      return health === 'healthy';
    },
    { timeout: 240_000, interval: 1000, describe: 'the container to turn healthy' },
  ).catch(async (err) => {
    throw new Error(`${(err as Error).message}\nits output:\n${(await logsOf(container)).slice(-4000)}`);
  });
}, 600_000);

afterAll(async () => {
  await run('docker', ['rm', '-f', '-v', container]);
  await admin((c) => c.query(`drop database if exists ${database} with (force)`)).catch(() => {});
  await site?.close();
});

describe(`the image alone (${IMAGE})`, () => {
  it('runs as the non-root user node on a read-only root, writing only /tmp and its data directory', async () => {
    const inspected = JSON.parse(await docker('inspect', container))[0];
    expect(inspected.Config.User).toBe('node');
    expect(inspected.HostConfig.ReadonlyRootfs).toBe(true);
    // The server process itself, as the host sees it: uid 1000, not root.
    const top = await docker('top', container, '-eo', 'pid,uid,args');
    const server = top.split('\n').find((line) => line.includes('dist/cli/main.js serve'));
    expect(server?.trim().split(/\s+/)[1]).toBe('1000');
    expect((await run('docker', ['exec', container, 'touch', '/app/dist/written'])).stderr).toMatch(/Read-only file system/);
    await docker('exec', container, 'touch', '/tmp/written', '/var/lib/mediagate/written');
  });

  it('migrated the fresh database before it turned healthy', async () => {
    const logs = await logsOf(container);
    expect(logs).toMatch(/"migrations":\[[^\]]+\][^\n]*"msg":"database migrated"/);
    expect(logs).toContain('"msg":"mediagate is listening"');
    const tables = await admin(
      async (c) =>
        (await c.query(`select table_name from information_schema.tables where table_schema = 'public'`)).rows.map(
          (r: { table_name: string }) => r.table_name,
        ),
      database,
    );
    expect(tables).toEqual(expect.arrayContaining(['account', 'api_key', 'credit_entry', 'job']));
  });

  it('`mediagate config check` inside says all is well: ffmpeg, ffprobe, PocketSphinx, the database, Redis', async () => {
    const r = await run('docker', ['exec', container, 'node', 'dist/cli/main.js', 'config', 'check']);
    if (r.code !== 0) throw new Error(`config check exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
    expect(r.stdout).toMatch(/all well\s*$/);
  });

  it('parses and transcribes (PocketSphinx) for an account and a key made with the CLI inside, and charges for each', async () => {
    const account = await cliIn<{ id: string }>(
      container,
      'account',
      'create',
      '--name',
      'Image check',
      '--credits',
      '10',
      '--membership-days',
      '30',
    );
    key = (await cliIn<{ key: string }>(container, 'key', 'create', account.id)).key;
    expect(key).toMatch(/^mg_live_/);

    const parse = await curl('POST', `${base}/api/parse`, authorized(), { url: `${site.origin}/clip.mp4` });
    expectStatus(parse, 200, 'the parse');
    expect(parse.json()).toMatchObject({
      status: 'SUCCEEDED',
      provider: 'builtin',
      media: { kind: 'video', container: 'mp4', width: 320, height: 240, hasAudio: true, hasVideo: true },
      credits: { charged: 1, balance: 9 },
    });

    const transcription = await curl('POST', `${base}/api/transcribe`, authorized(), {
      mediaUrl: `${site.origin}/hello.m4a`,
      language: 'en',
    });
    expectStatus(transcription, 200, 'the transcription');
    const body = transcription.json<TranscriptionBody>();
    expect(body).toMatchObject({ status: 'SUCCEEDED', provider: 'local', language: 'en', credits: { charged: 1, balance: 8 } });
    expect(body.text).toMatch(/hello/i);
    expect(body.segments.length).toBeGreaterThan(0);

    const me = await curl('POST', `${base}/graphql`, authorized(), { query: '{ me { credits { available held } } }' });
    expectStatus(me, 200, 'the balance');
    expect(me.json()).toEqual({ data: { me: { credits: { available: 8, held: 0 } } } });
  });

  it('on SIGTERM finishes the transcription in flight, then exits 0', async () => {
    const inFlight = curl(
      'POST',
      `${base}/api/transcribe`,
      { ...authorized(), 'x-request-id': `drain-${suffix}` },
      {
        mediaUrl: `${site.origin}/held.m4a`,
        language: 'en',
      },
    );
    // The gateway is fetching the media: the request is in flight, and stays so until it is let through.
    await waitFor(() => held.length > 0, { timeout: 60_000, describe: 'the gateway to fetch /held.m4a' });
    await docker('kill', '--signal', 'TERM', container);
    await waitFor(async () => (await logsOf(container)).includes('"msg":"shutting down"'), {
      timeout: 30_000,
      interval: 200,
      describe: 'the server to log that it is shutting down',
    });
    releaseHeld = true;
    for (const answer of held.splice(0)) answer();
    const reply = await inFlight;
    if (reply.status !== 200)
      throw new Error(
        `the transcription in flight at SIGTERM answered ${reply.status}: ${reply.body}\n${(await logsOf(container)).slice(-6000)}`,
      );
    expect(reply.json()).toMatchObject({ provider: 'local', credits: { charged: 1, balance: 7 } });
    const exitCode = Number((await must('docker', ['wait', container], { timeoutMs: 120_000 })).trim());
    const logs = await logsOf(container);
    if (exitCode !== 0) throw new Error(`the container exited ${exitCode}:\n${logs.slice(-4000)}`);
    expect(logs).toContain('"msg":"stopped"');
    // The request finished after the stop began: it was drained, not cut.
    const completed = logs.split('\n').findIndex((l) => l.includes(`drain-${suffix}`) && l.includes('request completed'));
    expect(completed).toBeGreaterThan(logs.split('\n').findIndex((l) => l.includes('"msg":"shutting down"')));
  });
});
