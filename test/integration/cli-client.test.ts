import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { FakeSite } from '../fakes/site.fake.js';
import type { Harness } from '../support/harness.js';
import { transcriptionWorld, type TranscriptionWorld } from '../support/world.js';
import { waitFor } from '../support/wait-for.js';
import { jobBody } from '../support/bodies.js';

const NODE = join(process.cwd(), 'node_modules/.bin/node');
const CLI = join(process.cwd(), 'dist/cli/main.js');

const PAGE = `<!doctype html><html><head><title>A talk at the bay</title></head><body>
  <video controls><source src="/m.mp4" type='video/mp4; codecs="avc1.42c01f, mp4a.40.2"' size="720"></video>
</body></html>`;

/** Strict SRT: numbered cues from 1, `hh:mm:ss,mmm --> hh:mm:ss,mmm`, text, one blank line between cues. */
const SRT = /^(\d+\n\d{2}:\d{2}:\d{2},\d{3} --> \d{2}:\d{2}:\d{2},\d{3}\n[^\n]+(\n[^\n]+)*\n\n)+$/;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The client commands, run as a person would run them: the built CLI against a running gateway. */
describe('mediagate parse / transcribe (client commands)', () => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;
  let dir: string;
  let key: string;
  let accountId: string;
  const requests: string[] = [];

  beforeAll(async () => {
    // The gateway's request log says which calls the CLI made.
    const sink = new Writable({
      write(chunk, _enc, done) {
        const line = JSON.parse(chunk.toString());
        if (line.msg === 'incoming request') requests.push(`${line.req.method} ${line.req.url}`);
        done();
      },
    });
    world = await transcriptionWorld({
      media: [
        { path: '/m.mp4', seconds: 2, video: true },
        { path: '/talk.mp3', seconds: 75 },
      ],
      pages: { '/watch': PAGE, '/empty': { title: 'Nothing here', body: '<p>text only</p>' } },
      logger: pino({ level: 'info' }, sink),
    });
    ({ h, site } = world);
    // Media whose download never finishes: the job runs until it is canceled.
    site.endless('/endless.mp3', 'audio/mpeg');
    ({ key, accountId } = await h.account({ credits: 50 }));
    dir = mkdtempSync(join(tmpdir(), 'mediagate-cli-client-'));
  });
  afterAll(async () => {
    await world?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the CLI; the key (from the environment unless given) must appear in no output. */
  const cli = (args: string[], opts: { key?: string | null } = {}): Promise<Run> => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      MEDIAGATE_API_URL: h.url,
      MEDIAGATE_API_KEY: opts.key === undefined ? key : (opts.key ?? ''),
    };
    return new Promise((resolve) => {
      execFile(NODE, [CLI, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        for (const secret of [key, opts.key].filter((k): k is string => !!k)) {
          expect(stdout + stderr).not.toContain(secret);
        }
        resolve({ code, stdout, stderr });
      });
    });
  };

  /** The subtitles the gateway serves for the job the CLI announced on stderr. */
  const subtitles = async (stderr: string, format: 'srt' | 'vtt') => {
    const jobId = /^job (\S+)/.exec(stderr)![1];
    const res = await h.request('GET', `/api/transcriptions/${jobId}.${format}`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.statusCode).toBe(200);
    return res.body;
  };

  it('parse prints a short summary and exits 0', async () => {
    const r = await cli(['parse', `${site.origin}/watch`, '--quality', '720']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toContain(`media:    ${site.origin}/m.mp4`);
    expect(r.stdout).toMatch(/^kind: +video, mp4$/m);
    // The page says 720; the gateway's probe reads the file's real height (makeMedia draws 160x120).
    expect(r.stdout).toMatch(/^height: +120$/m);
    expect(r.stdout).toMatch(/^hasAudio: +true$/m);
    expect(r.stdout).toMatch(/^title: +A talk at the bay$/m);
    expect(r.stdout).toMatch(/^credits: +1 charged, balance \d+$/m);
  });

  it('--json parse prints exactly one JSON object, the response body', async () => {
    const r = await cli(['--json', 'parse', `${site.origin}/watch`, '--mode', 'auto']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const body = JSON.parse(lines[0]);
    expect(body).toMatchObject({
      status: 'SUCCEEDED',
      media: { url: `${site.origin}/m.mp4`, kind: 'video', hasAudio: true },
      credits: { charged: 1 },
    });
  });

  it('parse of a page without media: exit 1 with the error code (and the error body with --json)', async () => {
    const r = await cli(['parse', `${site.origin}/empty`]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error NO_MEDIA_FOUND: .+\n$/);
    const j = await cli(['--json', 'parse', `${site.origin}/empty`]);
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stdout)).toMatchObject({ error: { code: 'NO_MEDIA_FOUND', requestId: expect.any(String) } });
  });

  it('transcribe --format srt --out writes a valid SRT, showing progress lines when stderr is no terminal', async () => {
    const out = join(dir, 't.srt');
    const r = await cli(['transcribe', `${site.origin}/talk.mp3`, '--format', 'srt', '--out', out, '--language', 'en']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`wrote ${out}\n`);
    expect(r.stderr).toMatch(/^job [0-9a-f-]{36} (QUEUED|RUNNING)\n/);
    const progress = r.stderr.split('\n').filter((l) => l.startsWith('progress '));
    expect(progress.at(-1)).toBe('progress 100%');
    expect(progress.every((l) => /^progress \d{1,3}%$/.test(l))).toBe(true);
    expect(new Set(progress).size).toBe(progress.length); // a line only when the value changes
    const srt = readFileSync(out, 'utf8');
    expect(srt).toMatch(SRT);
    expect(srt).toMatch(/^1\n00:00:00,000 --> \S+\nWelcome/);
    expect(srt).toBe(await subtitles(r.stderr, 'srt'));
  });

  it('the format follows --out when not given: .vtt gets WebVTT', async () => {
    const out = join(dir, 't.vtt');
    const r = await cli(['transcribe', `${site.origin}/talk.mp3`, '--out', out]);
    expect(r.code).toBe(0);
    const vtt = readFileSync(out, 'utf8');
    expect(vtt).toMatch(/^WEBVTT\n\n(\S+\n)?00:00:00\.000 --> \d{2}:\d{2}:\d{2}\.\d{3}\n/);
    expect(vtt).toBe(await subtitles(r.stderr, 'vtt'));
  });

  it('--json transcribe prints only the transcription JSON, as POST /api/transcribe answers it', async () => {
    const before = await h.balance(accountId);
    const seen = requests.length;
    const r = await cli(['--json', 'transcribe', `${site.origin}/talk.mp3`]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const body = JSON.parse(lines[0]);
    expect(body).toMatchObject({
      id: expect.any(String),
      status: 'SUCCEEDED',
      mediaUrl: `${site.origin}/talk.mp3`,
      provider: 'openai',
      text: expect.any(String),
      credits: { charged: 2, balance: before.available - 2 },
    });
    expect(body.segments[0]).toMatchObject({
      index: 1,
      start: 0,
      end: expect.any(Number),
      text: expect.stringContaining('Welcome'),
      speaker: null,
    });
    // Exactly the finished job's result, read from the polls alone: no second call for the balance.
    expect(body).toEqual(jobBody(await h.request('GET', `/api/jobs/${body.id}`, { headers: { authorization: `Bearer ${key}` } })).result);
    expect(requests.slice(seen).filter((r) => r !== `GET /api/jobs/${body.id}`)).toEqual(['POST /api/transcribe']);

    const srt = await cli(['--json', 'transcribe', `${site.origin}/talk.mp3`, '--format', 'srt']);
    expect(srt.code).toBe(0);
    expect(JSON.parse(srt.stdout).srt).toMatch(SRT);
  });

  it('a bad key: exit 1 and error UNAUTHENTICATED; no key: exit 2', async () => {
    const bad = `mg_live_000000000000_${'x'.repeat(38)}`;
    const r = await cli(['parse', `${site.origin}/watch`], { key: bad });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error UNAUTHENTICATED: /);
    const t = await cli(['transcribe', `${site.origin}/talk.mp3`, '--key', bad]);
    expect(t.code).toBe(1);
    expect(t.stderr).toMatch(/^error UNAUTHENTICATED: /);

    const none = await cli(['parse', `${site.origin}/watch`], { key: null });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/MEDIAGATE_API_KEY/);
  });

  it('a gateway that is not running: error UNREACHABLE, exit 1', async () => {
    const r = await cli(['parse', `${site.origin}/watch`, '--api', 'http://127.0.0.1:9']);
    expect(r).toMatchObject({ code: 1, stdout: '', stderr: 'error UNREACHABLE: cannot reach http://127.0.0.1:9\n' });
  });

  it('a failed job: its error code, exit 1', async () => {
    const r = await cli(['transcribe', `${site.origin}/missing.mp3`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error CONTENT_UNAVAILABLE: .*404/m);
  });

  it('Ctrl-C cancels the running job (its hold released) and exits 130', async () => {
    const { key: own, accountId: owner } = await h.account({ credits: 5 });
    const child = spawn(NODE, [CLI, 'transcribe', `${site.origin}/endless.mp3`], {
      env: { ...process.env, MEDIAGATE_API_URL: h.url, MEDIAGATE_API_KEY: own },
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await waitFor(() => /^progress /m.test(stderr), {
      describe: `a progress line on stderr (so far: ${JSON.stringify(stderr)})`,
      timeout: 10_000,
      interval: 50,
    });
    expect(await h.balance(owner)).toEqual({ available: 4, held: 1 });
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    const jobId = /^job (\S+)/.exec(stderr)![1];
    expect(stderr).toContain(`error INTERRUPTED: interrupted; job ${jobId} canceled`);
    expect(requests).toContain(`POST /api/jobs/${jobId}/cancel`);
    const job = await h.gql<{ job: { status: string } }>(`query($id: ID!) { job(id: $id) { status } }`, { id: jobId }, own);
    expect(job.data.job.status).toBe('CANCELED');
    expect(await h.balance(owner)).toEqual({ available: 5, held: 0 });
  });
});
