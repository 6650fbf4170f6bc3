import { writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import cliProgress from 'cli-progress';
import { Option, type Command } from 'commander';
import { ClientError, DEFAULT_API, call, connect, json, type Connection, type ConnectionOptions } from './gateway-client.js';

/**
 * The client commands: `parse` and `transcribe` against a running gateway, over its public HTTP
 * API with an API key, as any other client would call it. They never open the database.
 */

/** Polling starts brisk and slows while nothing changes: a long job must not eat the key's rate limit. */
const POLL_MIN_MS = 500;
const POLL_MAX_MS = 2000;
const EXIT_INTERRUPTED = 130;

/** A job as `GET /api/jobs/{id}` shows it (the fields the client reads). */
interface JobView {
  id: string;
  status: string;
  progress: number;
  /** Once SUCCEEDED: the body POST /api/transcribe answers when it waits. */
  result?: Record<string, unknown> | null;
  error?: { code: string; message: string } | null;
}

type SubtitleFormat = 'srt' | 'vtt' | 'json';

// ---- parse ------------------------------------------------------------------------------------

interface ParseBody {
  media?: {
    url?: string;
    kind?: string;
    container?: string | null;
    height?: number | null;
    hasAudio?: boolean | null;
    audio?: { url?: string } | null;
  };
  items?: unknown[];
  itemsTotal?: number;
  metadata?: { title?: string | null };
  credits?: { charged?: number; balance?: number };
}

/** The few lines a person wants from a parse. */
function parseSummary(r: ParseBody): string {
  const m = r.media ?? {};
  const rows: [string, unknown][] = [
    ['media', m.url],
    ['kind', [m.kind, m.container].filter(Boolean).join(', ')],
    ['height', m.height ?? 'unknown'],
    ['hasAudio', m.hasAudio ?? 'unknown'],
  ];
  if (m.audio?.url) rows.push(['audio', m.audio.url]);
  if (r.items?.length) rows.push(['items', `${r.items.length} of ${r.itemsTotal ?? r.items.length}`]);
  rows.push(['title', r.metadata?.title ?? '(none)']);
  rows.push(['credits', `${r.credits?.charged ?? 0} charged, balance ${r.credits?.balance ?? '?'}`]);
  return rows.map(([k, v]) => `${`${k}:`.padEnd(10)}${String(v)}`).join('\n');
}

async function parse(c: Connection, url: string, o: { mode?: string; quality?: string }, asJson: boolean): Promise<void> {
  const body = await json<ParseBody>(await call(c, 'POST', '/api/parse', { body: { url, mode: o.mode, quality: o.quality } }));
  process.stdout.write(asJson ? `${JSON.stringify(body)}\n` : `${parseSummary(body)}\n`);
}

// ---- transcribe -------------------------------------------------------------------------------

interface Progress {
  update(job: JobView): void;
  stop(): void;
}

/** A bar on a terminal, a line per change elsewhere, nothing with --json. */
function progressReporter(asJson: boolean): Progress {
  if (asJson) return { update() {}, stop() {} };
  const percent = (job: JobView) => Math.max(0, Math.min(100, Math.round((Number(job.progress) || 0) * 100)));
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      { format: 'transcribing [{bar}] {percentage}% | {status}', stream: process.stderr, hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
    let running = false;
    return {
      update(job) {
        if (running) bar.update(percent(job), { status: job.status });
        else bar.start(100, percent(job), { status: job.status });
        running = true;
      },
      stop() {
        if (running) bar.stop();
        running = false;
      },
    };
  }
  let last = -1;
  return {
    update(job) {
      const p = percent(job);
      if (p !== last) process.stderr.write(`progress ${p}%\n`);
      last = p;
    },
    stop() {},
  };
}

const isActive = (job: JobView) => job.status === 'QUEUED' || job.status === 'RUNNING';

/** Polls the job's Location until it ends; a 429 waits as long as the gateway asks. */
async function follow(c: Connection, location: string, first: JobView, progress: Progress): Promise<JobView> {
  let job = first;
  let wait = POLL_MIN_MS;
  progress.update(job);
  while (isActive(job)) {
    await sleep(wait, undefined, { signal: c.signal });
    let next: JobView;
    try {
      next = await json<JobView>(await call(c, 'GET', location));
    } catch (err) {
      if (err instanceof ClientError && err.code === 'RATE_LIMITED') {
        wait = Math.min(60, err.retryAfterSeconds ?? 5) * 1000;
        continue;
      }
      throw err;
    }
    const changed = next.status !== job.status || next.progress !== job.progress;
    job = next;
    progress.update(job);
    wait = changed ? POLL_MIN_MS : Math.min(POLL_MAX_MS, Math.round(wait * 1.5));
  }
  progress.stop();
  return job;
}

function formatFor(format: SubtitleFormat | undefined, out: string | undefined): SubtitleFormat {
  if (format) return format;
  const ext = out?.toLowerCase().match(/\.(srt|vtt)$/)?.[1];
  return (ext as SubtitleFormat | undefined) ?? 'json';
}

interface TranscribeOptions {
  language?: string;
  format?: SubtitleFormat;
  out?: string;
}

async function transcribe(
  c: Connection,
  mediaUrl: string,
  o: TranscribeOptions,
  asJson: boolean,
  running: { jobId: string | null; progress: Progress | null },
): Promise<void> {
  const started = await call(c, 'POST', '/api/transcribe', {
    body: { mediaUrl, language: o.language },
    headers: { prefer: 'respond-async' },
  });
  const first = await json<JobView & Record<string, unknown>>(started);
  let transcription: Record<string, unknown>;
  if (started.status === 202) {
    running.jobId = first.id;
    if (!asJson) process.stderr.write(`job ${first.id} ${first.status}\n`);
    running.progress = progressReporter(asJson);
    const job = await follow(c, started.headers.get('location') ?? `/api/jobs/${first.id}`, first, running.progress);
    running.jobId = null;
    if (job.status !== 'SUCCEEDED') {
      const code = job.error?.code ?? job.status;
      const message = job.error?.message || `the job ended ${job.status}`;
      throw new ClientError(code, message, 1, { error: { code, message, details: { jobId: job.id, status: job.status } } });
    }
    // A finished job's result is the very body the waiting call answers, balance included.
    transcription = job.result ?? {};
  } else {
    // A gateway that does not honour Prefer: respond-async answers with the transcription itself.
    transcription = first;
  }
  const format = formatFor(o.format, o.out);
  const text =
    format === 'json'
      ? `${JSON.stringify(transcription, null, 2)}\n`
      : await (await call(c, 'GET', `/api/transcriptions/${encodeURIComponent(String(transcription.id))}.${format}`)).text();
  if (o.out) {
    await writeFile(o.out, text);
    process.stdout.write(asJson ? `${JSON.stringify(transcription)}\n` : `wrote ${o.out}\n`);
  } else if (asJson) {
    // As GraphQL's Transcription: the subtitles as a field beside the transcript.
    process.stdout.write(`${JSON.stringify(format === 'json' ? transcription : { ...transcription, [format]: text })}\n`);
  } else {
    process.stdout.write(text);
  }
}

// ---- wiring -----------------------------------------------------------------------------------

/** Waits for stdout and stderr to take what was written, then exits. */
async function exit(code: number): Promise<never> {
  await Promise.all([process.stdout, process.stderr].map((s) => new Promise<void>((resolve) => s.write('', () => resolve()))));
  process.exit(code);
}

function report(err: unknown, asJson: boolean): Promise<never> {
  const e = err instanceof ClientError ? err : new ClientError('CLIENT_ERROR', err instanceof Error ? err.message : String(err));
  process.stderr.write(`error ${e.code}: ${e.message}\n`);
  if (asJson) process.stdout.write(`${JSON.stringify(e.body)}\n`);
  return exit(e.exitCode);
}

const connectionOptions = (cmd: Command) =>
  cmd
    .option('--api <url>', `the gateway's address (default: MEDIAGATE_API_URL or ${DEFAULT_API})`)
    .option('--key <key>', 'the API key (default: MEDIAGATE_API_KEY)');

/** Registers `parse` and `transcribe`, the commands that call a running gateway, on the operator CLI. */
export function registerClientCommands(program: Command): void {
  const asJson = () => Boolean(program.opts().json);

  connectionOptions(
    program
      .command('parse <url>')
      .description('resolve a video page into direct media, on a running gateway')
      .addOption(new Option('--mode <mode>', 'what to get').choices(['auto', 'audio', 'mute']))
      .addOption(new Option('--quality <quality>', 'highest height wanted').choices(['max', '1080', '720', '480'])),
  ).action(async (url: string, o: ConnectionOptions & { mode?: string; quality?: string }) => {
    const controller = new AbortController();
    process.once('SIGINT', () => {
      controller.abort();
      void report(new ClientError('INTERRUPTED', 'interrupted', EXIT_INTERRUPTED), asJson());
    });
    try {
      await parse(connect(o, controller.signal), url, o, asJson());
    } catch (err) {
      if (!controller.signal.aborted) await report(err, asJson());
      return;
    }
    await exit(0);
  });

  connectionOptions(
    program
      .command('transcribe <mediaUrl>')
      .description('transcribe media on a running gateway, following the job to its end')
      .option('--language <language>', 'the spoken language (BCP-47 or ISO-639-1), when known')
      .addOption(new Option('--format <format>', 'srt, vtt or json (default: from --out, else json)').choices(['srt', 'vtt', 'json']))
      .option('--out <file>', 'write the transcript to this file instead of stdout'),
  ).action(async (mediaUrl: string, o: ConnectionOptions & TranscribeOptions) => {
    const controller = new AbortController();
    const running: { jobId: string | null; progress: Progress | null } = { jobId: null, progress: null };
    let c: Connection | null = null;
    const onInterrupt = async () => {
      process.once('SIGINT', () => void exit(EXIT_INTERRUPTED)); // a second Ctrl-C: out at once
      controller.abort();
      running.progress?.stop();
      let message = 'interrupted';
      if (c && running.jobId) {
        // Cancel the job so its hold is released; a short wait, it is a courtesy.
        const cancel: Connection = { ...c, signal: AbortSignal.timeout(3000) };
        const status = await call(cancel, 'POST', `/api/jobs/${encodeURIComponent(running.jobId)}/cancel`)
          .then((res) => json<JobView>(res))
          .then((job) => job.status)
          .catch(() => null);
        message = `interrupted; job ${running.jobId} ${status === 'CANCELED' ? 'canceled' : status ? `already ${status}` : 'may still run'}`;
      }
      await report(new ClientError('INTERRUPTED', message, EXIT_INTERRUPTED), asJson());
    };
    process.once('SIGINT', () => void onInterrupt());
    try {
      c = connect(o, controller.signal);
      await transcribe(c, mediaUrl, o, asJson(), running);
    } catch (err) {
      running.progress?.stop();
      if (!controller.signal.aborted) await report(err, asJson());
      return;
    }
    await exit(0);
  });
}
