import { randomUUID } from 'node:crypto';
import { openAsBlob } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { ProviderError } from '../../errors.js';
import { whisperLanguageCode } from './whisper-languages.js';
import { nextSeam, pieceBetween, stitchPieces, type PiecePlan, type Seam } from './audio-pieces.js';
import type {
  TranscriptResult,
  TranscriptSegment,
  TranscriptWord,
  TranscriptionProvider,
  TranscriptionRequest,
} from './transcription.types.js';
import { roundMs } from './times.js';

/** Settings of the OpenAI-compatible transcription provider (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_TRANSCRIBE_MODEL). */
export interface OpenAiTranscriptionOptions {
  /** Includes /v1, as in the official SDK. Default https://api.openai.com/v1. */
  baseUrl?: string;
  /** Optional: self-hosted servers (speaches, whisper.cpp) often run without one. */
  apiKey?: string;
  /** Default whisper-1. */
  model?: string;
  timeoutMs: number;
  /** OpenAI refuses uploads over 25 MiB; default 25 MiB. */
  maxUploadBytes?: number;
  /** Audio longer than this is cut into pieces transcribed in parallel (OPENAI_PIECE_SECONDS, default 600). */
  pieceSeconds?: number;
  /** Pieces of one file transcribed at once (OPENAI_CONCURRENCY, default 4). */
  concurrency?: number;
  /** Cuts the planned stretches out of the audio file, numbering them from `first`; without it, long audio goes as one upload and audio over the cap is refused. */
  cut?: (audioPath: string, plans: readonly PiecePlan[], first: number, signal: AbortSignal) => Promise<{ path: string }[]>;
}

/** At most `size` tasks at once, the rest in order of arrival. */
class Semaphore {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  constructor(size: number) {
    this.free = size;
  }
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free -= 1;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free += 1;
    }
  }
}

/**
 * Gives each segment the words (top-level `words` of verbose_json) that fall in its span by their
 * middle; a word between two segments goes to the one before it.
 */
function attachWords(segments: TranscriptSegment[], raw: unknown): void {
  if (!Array.isArray(raw) || !segments.length) return;
  const words: TranscriptWord[] = [];
  for (const w of raw as Record<string, unknown>[]) {
    if (typeof w !== 'object' || w === null || !isNum(w.start) || !isNum(w.end) || typeof w.word !== 'string' || !w.word.trim()) continue;
    words.push({ start: roundMs(w.start), end: roundMs(Math.max(w.start, w.end)), text: w.word.trim() });
  }
  let s = 0;
  for (const w of words) {
    const mid = (w.start + w.end) / 2;
    while (s < segments.length - 1 && mid >= segments[s + 1].start) s++;
    (segments[s].words ??= []).push(w);
  }
}

/** The documented verbose_json response; compatible servers may leave parts out. */
interface VerboseJson {
  language?: unknown;
  duration?: unknown;
  text?: unknown;
  segments?: unknown;
  /** With timestamp_granularities[]=word: every word with its own times. */
  words?: unknown;
}

const AUDIO_TYPES: Readonly<Record<string, string>> = {
  '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav',
  '.m4a': 'audio/mp4',
  '.mp4': 'audio/mp4',
  '.ogg': 'audio/ogg',
  '.oga': 'audio/ogg',
  '.opus': 'audio/ogg',
  '.webm': 'audio/webm',
  '.flac': 'audio/flac',
};

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * multipart/form-data as one Blob: text parts around the file's own (lazily read) Blob. Not a
 * FormData: Node's fetch writes a FormData body from a task of its own that, when the server resets
 * the connection mid-upload, enqueues into the canceled request stream and rejects unhandled, which
 * stops the process. A Blob body is read by fetch itself, and its length is known up front.
 */
function multipartBody(
  file: { name: string; filename: string; type: string; blob: Blob },
  fields: readonly [string, string][],
): { body: Blob; contentType: string } {
  const boundary = `mediagate-${randomUUID()}`;
  // The WHATWG encoding of names in a Content-Disposition header.
  const quoted = (s: string) => `"${s.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22')}"`;
  const parts: (string | Blob)[] = [
    `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(file.name)}; filename=${quoted(file.filename)}\r\nContent-Type: ${file.type}\r\n\r\n`,
    file.blob,
    '\r\n',
  ];
  for (const [name, value] of fields)
    parts.push(`--${boundary}\r\nContent-Disposition: form-data; name=${quoted(name)}\r\n\r\n${value}\r\n`);
  parts.push(`--${boundary}--\r\n`);
  return { body: new Blob(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * Any OpenAI-compatible `POST {baseUrl}/audio/transcriptions` (OpenAI, Groq, speaches, LocalAI,
 * whisper.cpp server). The base URL is operator-set and trusted, so it is called with plain fetch,
 * not through the guarded client that user-supplied URLs go through.
 */
export class OpenAiTranscriptionProvider implements TranscriptionProvider {
  readonly name = 'openai';
  private readonly url: string;
  private readonly model: string;
  private readonly maxUploadBytes: number;

  constructor(private readonly options: OpenAiTranscriptionOptions) {
    this.url = `${(options.baseUrl ?? 'https://api.openai.com/v1').replace(/\/+$/, '')}/audio/transcriptions`;
    this.model = options.model ?? 'whisper-1';
    this.maxUploadBytes = options.maxUploadBytes ?? 25 * 1024 * 1024;
  }

  /**
   * Uploads the prepared audio and maps the verbose_json answer onto a TranscriptResult. Audio
   * longer than a piece (or larger than one upload) is cut at pauses into pieces that are
   * transcribed a few at a time and laid back on one time line: an hour waits on the slowest
   * piece, not on one call from start to end. It is called once the audio is complete and its price
   * held, so nothing leaves that was not paid for.
   */
  async transcribe(request: TranscriptionRequest): Promise<TranscriptResult> {
    request.signal.throwIfAborted();
    const { cut } = this.options;
    const duration = request.durationSeconds;
    // Pieces stay under the upload cap (32 kbit/s MP3 is 4000 bytes a second) with a margin.
    const capSeconds = Math.max(10, Math.floor((this.maxUploadBytes * 0.9) / 4000));
    const pieceSeconds = Math.min(this.options.pieceSeconds ?? 600, capSeconds);
    if (!cut || !nextSeam(0, duration, [], pieceSeconds)) {
      const size = await this.sizeOf(request.audioPath);
      if (size > this.maxUploadBytes)
        throw new ProviderError(this.name, 'too_large', `audio of ${size} bytes exceeds the ${this.maxUploadBytes}-byte upload limit`);
      return this.transcribeFile(request);
    }
    const plans: PiecePlan[] = [];
    const running: Promise<TranscriptResult>[] = [];
    const slots = new Semaphore(this.options.concurrency ?? 4);
    let doneSeconds = 0;
    let from: Seam = { at: 0, quiet: true };
    for (;;) {
      const seam = nextSeam(from.at, duration, request.silences ?? [], pieceSeconds) ?? {
        at: duration,
        quiet: true,
      };
      const plan = pieceBetween(from, seam, duration);
      const [piece] = await cut(request.audioPath, [plan], plans.length, request.signal);
      plans.push(plan);
      running.push(
        slots.run(async () => {
          const result = await this.transcribeFile({ ...request, audioPath: piece.path, durationSeconds: plan.end - plan.start });
          // By the audio done, not the pieces.
          doneSeconds += plan.keepTo - plan.keepFrom;
          request.progress?.(doneSeconds / duration);
          return result;
        }),
      );
      // A failed piece fails the whole at once; the others' answers are not waited for.
      running.at(-1)!.catch(() => undefined);
      if (seam.at >= duration) break;
      from = seam;
    }
    return stitchPieces(await Promise.all(running), plans, request.language ?? null);
  }

  private async sizeOf(path: string): Promise<number> {
    return stat(path).then(
      (s) => s.size,
      (err: unknown) => {
        throw new ProviderError(this.name, 'failed', 'the prepared audio file cannot be read', { cause: err });
      },
    );
  }

  /** One upload of one file. */
  private async transcribeFile(request: TranscriptionRequest): Promise<TranscriptResult> {
    const size = await this.sizeOf(request.audioPath);
    // Refuse before sending: the upstream would only answer 413 after the whole upload.
    if (size > this.maxUploadBytes) {
      throw new ProviderError(this.name, 'too_large', `audio of ${size} bytes exceeds the ${this.maxUploadBytes}-byte upload limit`);
    }
    const ext = extname(request.audioPath).toLowerCase();
    const form = multipartBody(
      {
        name: 'file',
        filename: basename(request.audioPath),
        type: AUDIO_TYPES[ext] ?? 'application/octet-stream',
        blob: await openAsBlob(request.audioPath),
      },
      [
        ['model', this.model],
        ['response_format', 'verbose_json'],
        // Segments for the JSON, words for readable subtitles (servers that know no words ignore it).
        ['timestamp_granularities[]', 'segment'],
        ['timestamp_granularities[]', 'word'],
        ...(request.language ? [['language', request.language] as [string, string]] : []),
      ],
    );

    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    const signal = AbortSignal.any([request.signal, timeout]);
    // The caller's own abort is not a provider failure: hand its reason back unchanged.
    const interrupted = (err: unknown, what: string): unknown => {
      if (request.signal.aborted) return request.signal.reason;
      if (timeout.aborted)
        return new ProviderError(this.name, 'timeout', `the transcription server did not ${what} within ${this.options.timeoutMs} ms`);
      return err;
    };

    let res: Response;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        body: form.body,
        headers: {
          accept: 'application/json',
          'content-type': form.contentType,
          ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
        },
        // An API endpoint has no reason to redirect; following one would resend the key elsewhere.
        redirect: 'error',
        signal,
      });
    } catch (err) {
      throw interrupted(new ProviderError(this.name, 'failed', 'could not reach the transcription server', { cause: err }), 'answer');
    }
    if (!res.ok) {
      // The upstream's body stays unread: it is never logged or passed on.
      await res.body?.cancel().catch(() => undefined);
      if (res.status === 401 || res.status === 403)
        throw new ProviderError(this.name, 'failed', `upstream rejected the credentials (${res.status})`);
      if (res.status === 413)
        throw new ProviderError(this.name, 'too_large', 'the transcription server refused the upload as too large (413)');
      throw new ProviderError(this.name, 'failed', `the transcription server answered ${res.status}`);
    }
    let raw: string;
    try {
      raw = await res.text();
    } catch (err) {
      throw interrupted(
        new ProviderError(this.name, 'failed', 'the transcription server broke off its answer', { cause: err }),
        'finish its answer',
      );
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      throw new ProviderError(this.name, 'failed', 'the transcription server sent malformed JSON');
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new ProviderError(this.name, 'failed', 'the transcription server sent JSON that is not a transcription');
    }
    return this.toResult(body as VerboseJson, request);
  }

  private toResult(body: VerboseJson, request: TranscriptionRequest): TranscriptResult {
    const listed = Array.isArray(body.segments) ? (body.segments as Record<string, unknown>[]) : null;
    if (typeof body.text !== 'string' && !listed) {
      throw new ProviderError(this.name, 'failed', 'the transcription server answered without text or segments');
    }
    const segments: TranscriptSegment[] = [];
    for (const s of listed ?? []) {
      if (typeof s !== 'object' || s === null || !isNum(s.start) || !isNum(s.end) || typeof s.text !== 'string') continue;
      segments.push({ index: segments.length + 1, start: roundMs(s.start), end: roundMs(s.end), text: s.text.trim(), speaker: null });
    }
    attachWords(segments, body.words);
    const text = (typeof body.text === 'string' ? body.text : segments.map((s) => s.text).join(' ')).trim();
    const duration = isNum(body.duration) ? body.duration : (segments.at(-1)?.end ?? request.durationSeconds);
    const durationSeconds = isNum(duration) && duration >= 0 ? roundMs(duration) : null;
    // Without segments (a server that ignores the granularity) the subtitles still need a cue:
    // one spanning the whole audio.
    if (!segments.length && text) segments.push({ index: 1, start: 0, end: durationSeconds ?? 0, text, speaker: null });
    return { language: whisperLanguageCode(body.language) ?? request.language ?? null, durationSeconds, text, segments };
  }
}
