import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { AppError } from '../../errors.js';
import { failpoint } from '../../failpoints.js';
import { MediaError } from '../../media/ffmpeg.js';
import { FetchError, failureReason } from '../../net/fetch-error.js';
import type { GuardedHttpClient } from '../../net/guarded-client.js';
import type { CircuitBreakers } from '../../providers/circuit-breakers.js';
import { runWithFailover, type FailoverLog } from '../../providers/provider-failover.js';
import { roundMs } from '../../providers/transcription/times.js';
import type { TranscriptResult, TranscriptionProvider } from '../../providers/transcription/transcription.types.js';
import { transcriptionPolicy } from './transcription.policy.js';
import type { Principal } from '../api-keys/api-key.service.js';
import { idempotencyFor } from '../tasks/idempotency.js';
import { successBody } from '../jobs/job.result.js';
import type { JobQueue, QueuedRun } from '../jobs/job-queue.js';
import type { TaskContext, TaskRunner } from '../tasks/task-runner.js';
import type { WebhookService } from '../webhooks/webhook.service.js';
import { dropNulls, httpUrl, validate } from '../validation.js';
import { preparePaidAudio } from './paid-audio.js';
import { TEMP_RETRY_AFTER_SECONDS, TempBudget, type TempBudgetState, tempDiskBusy } from './temp-budget.js';
import type { TranscriptionResponseBody } from '../../types/contract/transcription.js';

/** The transcription request as the contract spells it. */
export const transcribeInputSchema = z.strictObject({
  mediaUrl: httpUrl,
  language: z
    .string({ error: 'must be a string' })
    .regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, 'must be a BCP-47 or ISO-639-1 language code such as en or pt-BR')
    .optional(),
  /** Where the gateway POSTs the job when it ends (signed per Standard Webhooks). */
  webhookUrl: httpUrl.optional(),
});

/** A validated transcription request, as it is stored on the job. */
interface TranscribeRequest {
  mediaUrl: string;
  language: string | null;
  webhookUrl?: string;
}

/** The success body of a transcription, on both doors: the contract's. */
export type TranscriptionResponse = TranscriptionResponseBody;

export class TranscriptionService {
  constructor(
    private readonly deps: {
      config: Config;
      runner: TaskRunner;
      providers: readonly TranscriptionProvider[];
      client: GuardedHttpClient;
      log: FailoverLog;
      breakers?: CircuitBreakers;
      queue?: JobQueue;
      webhooks?: WebhookService;
      /** The process's temporary-disk budget (default: one of its own, from the configuration). */
      temp?: TempBudget;
    },
  ) {
    this.temp = deps.temp ?? new TempBudget(deps.config.temp);
  }

  private readonly temp: TempBudget;
  /** Synchronous transcriptions running per account in this process. */
  private readonly running = new Map<string, number>();

  /** What transcriptions hold of the temporary disk now (bytes, downloads), and the most bytes they ever held. */
  tempUsage(): TempBudgetState {
    return this.temp.snapshot();
  }

  /** Price of a transcription: per started minute of media, at least one minute. */
  price(durationSeconds: number): number {
    return Math.max(1, Math.ceil(durationSeconds / 60)) * this.deps.config.prices.transcribePerMinute;
  }

  /** Everything checked before any credit is held: scope (first, as GraphQL's declared rule), input, membership, URLs, a provider. */
  private async prepare(principal: Principal, rawInput: unknown): Promise<TranscribeRequest> {
    transcriptionPolicy.start(principal);
    const input = validate(transcribeInputSchema, dropNulls(rawInput as object));
    transcriptionPolicy.afterInput(principal);
    const mediaUrl = (await this.deps.client.checkUrl(input.mediaUrl)).toString();
    // The webhook URL is the caller's too: refused now if it leads somewhere private, and judged again at every delivery.
    const webhookUrl = input.webhookUrl ? (await this.deps.client.checkUrl(input.webhookUrl)).toString() : undefined;
    if (webhookUrl && !this.deps.webhooks?.available)
      throw new AppError('PROVIDER_UNAVAILABLE', 'This instance runs no job queue, which webhooks need.');
    if (this.deps.config.transcribeProviders.length === 0) {
      throw new AppError(
        'PROVIDER_UNAVAILABLE',
        'No transcription provider is configured: set OPENAI_API_KEY or OPENAI_BASE_URL, or install pocketsphinx for the offline one.',
      );
    }
    const language = input.language ? input.language.split('-')[0].toLowerCase() : null;
    // Without a webhook the stored input (and so the idempotency fingerprint) is what it always was.
    return webhookUrl ? { mediaUrl, language, webhookUrl } : { mediaUrl, language };
  }

  /** Transcribes while the caller waits. */
  async transcribe(
    principal: Principal,
    rawInput: unknown,
    options: { idempotencyKey?: string | null } = {},
  ): Promise<TranscriptionResponse> {
    const request = await this.prepare(principal, rawInput);
    const { mediaUrl, language } = request;
    const { config, runner } = this.deps;
    const release = this.takeSlot(principal.accountId);
    try {
      // The first minute is held up front; the rest as the prepared audio grows past it.
      const initial = this.price(0);
      const outcome = await runner.run({
        principal,
        operation: 'TRANSCRIBE',
        input: { ...request },
        idempotency: idempotencyFor(options.idempotencyKey, 'TRANSCRIBE', { ...request }),
        price: initial,
        timeoutMs: config.transcribeTimeoutMs,
        execute: (ctx) => this.work(mediaUrl, language, initial, ctx, false),
      });
      return successBody(outcome.jobId, { mediaUrl }, outcome.result, outcome);
    } finally {
      release();
    }
  }

  /** One of the account's synchronous slots, or 429 before anything is held; the function gives it back. */
  private takeSlot(accountId: string): () => void {
    const limit = this.deps.config.transcribeMaxPerAccount;
    const mine = this.running.get(accountId) ?? 0;
    if (mine >= limit) {
      throw new AppError(
        'RATE_LIMITED',
        `This account already has ${limit} transcriptions running; retry in ${TEMP_RETRY_AFTER_SECONDS} s, or queue it with startTranscription (Prefer: respond-async).`,
        { retryAfterSeconds: TEMP_RETRY_AFTER_SECONDS, limit },
      );
    }
    this.running.set(accountId, mine + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.running.get(accountId) ?? 1) - 1;
      if (left > 0) this.running.set(accountId, left);
      else this.running.delete(accountId);
    };
  }

  /**
   * Queues a transcription and returns its job id at once; `runJob` carries it out on a worker. With
   * an idempotency key, a repeated request gets the same job back (whatever its state) and is held
   * and charged once; a failed or canceled job frees its key.
   */
  async start(principal: Principal, rawInput: unknown, options: { idempotencyKey?: string | null } = {}): Promise<string> {
    const request = await this.prepare(principal, rawInput);
    const { config, runner, queue } = this.deps;
    if (!queue) throw new AppError('PROVIDER_UNAVAILABLE', 'This instance runs no job queue.');
    const { jobId, replayed } = await runner.enqueue({
      principal,
      operation: 'TRANSCRIBE',
      input: { ...request },
      idempotency: idempotencyFor(options.idempotencyKey, 'TRANSCRIBE', { ...request }),
      price: this.price(0),
      timeoutMs: config.transcribeTimeoutMs,
    });
    if (replayed) return jobId;
    try {
      await queue.send(jobId);
    } catch (err) {
      // Never leave a hold behind a job no worker will see.
      await runner.cancel(jobId);
      throw err;
    }
    return jobId;
  }

  /** The queue worker's handler for one queued transcription. */
  runJob(jobId: string): Promise<QueuedRun> {
    return this.deps.runner.runQueued(jobId, 'TRANSCRIBE', (ctx, job) =>
      this.work(String(job.input.mediaUrl), (job.input.language as string | null) ?? null, job.holdAmount, ctx, true),
    );
  }

  /** `waits`: a queued job waits its turn for the temporary disk; a caller who waits on the answer is refused at once (503). */
  private async work(mediaUrl: string, language: string | null, held: number, ctx: TaskContext, waits: boolean) {
    const { config, client, providers, log, breakers } = this.deps;
    const lease = this.temp.lease();
    const dir = await mkdtemp(join(tmpdir(), 'mediagate-'));
    try {
      const source = join(dir, 'source');
      const sourceBytes = await download(client, mediaUrl, source, config.mediaMaxBytes, ctx.signal, async (announced) => {
        // The disk for the whole file is reserved before its first byte: its announced length, else the most it may be.
        const bytes = announced ?? config.mediaMaxBytes;
        if (bytes > config.mediaMaxBytes) throw tooLarge(config.mediaMaxBytes);
        await lease.startDownload(bytes, waits ? ctx.signal : null);
        return bytes;
      });
      lease.endDownload(sourceBytes);
      await ctx.progress(0.2);
      let audioBytes = 0;
      const audioPath = join(dir, 'audio.mp3');
      // One ffmpeg pass prepares the audio, finds its pauses and counts its samples; the hold follows
      // the audio as it grows and ends at its exact price before any provider hears a second of it.
      const audio = await media(() =>
        preparePaidAudio({
          source,
          audioPath,
          ffmpegPath: config.ffmpegPath,
          signal: ctx.signal,
          perMinute: config.prices.transcribePerMinute,
          price: (seconds) => this.price(seconds),
          held,
          extendHold: (extra) => ctx.extendHold(extra),
          // Reserved ahead of ffmpeg, for the MP3 and what providers make of it (pieces, a WAV); never waited for.
          mayWrite: (seconds) => {
            const more = Math.ceil((seconds + AUDIO_RESERVE_AHEAD_SECONDS) * AUDIO_BYTES_PER_SECOND) - audioBytes;
            if (more <= 0) return true;
            if (!lease.grow(more)) return false;
            audioBytes += more;
            return true;
          },
          refused: tempDiskBusy,
        }),
      );
      if (audio.seconds <= 0) throw new AppError('NO_MEDIA_FOUND', 'The media has no audio to transcribe.');
      failpoint('transcribe.afterExtendHold');
      // The source is not needed any more: its disk is given back before the providers' long wait.
      await rm(source, { force: true });
      lease.free(sourceBytes);
      await ctx.progress(0.3);
      const durationSeconds = roundMs(audio.seconds);
      const progress = (fraction: number) => void ctx.progress(0.3 + 0.65 * Math.min(1, Math.max(0, fraction)));
      const { provider, result } = await runWithFailover(
        providers,
        ctx.signal,
        log,
        (p) => p.transcribe({ audioPath, mediaUrl, language, durationSeconds, signal: ctx.signal, silences: audio.silences, progress }),
        breakers,
      );
      // The length charged is the length sent, whatever a provider reports of it.
      const transcript: TranscriptResult = { ...result, language: result.language ?? language, durationSeconds };
      return { provider, result: transcript };
    } finally {
      await rm(dir, { recursive: true, force: true });
      lease.end();
    }
  }
}

/** Disk reserved per second of prepared audio: the 32 kbit/s MP3 (4 kB), its pieces (4 kB), the offline recogniser's WAV (32 kB). */
const AUDIO_BYTES_PER_SECOND = 40_000;
/** How far ahead of what ffmpeg reported the audio's disk is reserved. */
const AUDIO_RESERVE_AHEAD_SECONDS = 10;

const tooLarge = (maxBytes: number) =>
  new AppError('INVALID_INPUT', `The media is larger than ${maxBytes} bytes.`, { mediaUrl: `media larger than ${maxBytes} bytes` });

/** Downloads the media through the guarded client; returns its size. */
async function download(
  client: GuardedHttpClient,
  url: string,
  dest: string,
  maxBytes: number,
  signal: AbortSignal,
  admit: (announced: number | null) => Promise<number>,
): Promise<number> {
  try {
    return (await client.download(url, dest, { signal, maxBytes, timeoutMs: 15 * 60_000, admit })).bytes;
  } catch (err) {
    if (!(err instanceof FetchError)) throw err;
    if (err.kind === 'too_large') throw tooLarge(maxBytes);
    if (err.kind === 'timeout') throw new AppError('PROVIDER_TIMEOUT', 'The media could not be downloaded in time.');
    if (err.kind === 'http_status') throw new AppError('CONTENT_UNAVAILABLE', `The media URL answered ${err.status}.`);
    throw new AppError('CONTENT_UNAVAILABLE', `The media could not be downloaded: ${failureReason(err)}.`);
  }
}

async function media<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof MediaError)) throw err;
    if (err.kind === 'no_audio') throw new AppError('NO_MEDIA_FOUND', 'The media has no audio track to transcribe.');
    if (err.kind === 'timeout') throw new AppError('PROVIDER_TIMEOUT');
    throw new AppError('NO_MEDIA_FOUND', 'The URL does not hold media that can be read.');
  }
}
