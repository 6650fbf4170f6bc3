import { openAsBlob } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { ProviderError } from '../../errors.js';
import type { TranscriptResult, TranscriptSegment, TranscriptionProvider, TranscriptionRequest } from './transcription.types.js';
import { languageCode } from './whisper-languages.js';

export interface OpenAiOptions {
  /** Includes /v1, as in the official SDK. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
  maxUploadBytes?: number;
}

/** The documented verbose_json response; compatible servers may leave parts out. */
interface VerboseJson {
  language?: string;
  duration?: number;
  text?: string;
  segments?: { id?: number; start?: number; end?: number; text?: string }[];
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

/**
 * Any OpenAI-compatible `/audio/transcriptions` (OpenAI, Groq, speaches, LocalAI, whisper.cpp
 * server). The base URL is operator-set and trusted, so it is called directly, not through the
 * guarded client.
 */
export class OpenAiTranscriptionProvider implements TranscriptionProvider {
  readonly name = 'openai';
  private readonly maxUploadBytes: number;

  constructor(private readonly options: OpenAiOptions) {
    this.maxUploadBytes = options.maxUploadBytes ?? 25 * 1024 * 1024;
  }

  async transcribe(request: TranscriptionRequest): Promise<TranscriptResult> {
    const { size } = await stat(request.audioPath);
    if (size > this.maxUploadBytes) {
      throw new ProviderError(this.name, 'too_large', `audio of ${size} bytes exceeds the ${this.maxUploadBytes}-byte upload cap`);
    }
    const form = new FormData();
    form.append('file', await openAsBlob(request.audioPath, { type: 'audio/mpeg' }), basename(request.audioPath));
    form.append('model', this.options.model);
    form.append('response_format', 'verbose_json');
    form.append('timestamp_granularities[]', 'segment');
    if (request.language) form.append('language', request.language);

    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    let res: Response;
    try {
      res = await fetch(`${this.options.baseUrl.replace(/\/+$/, '')}/audio/transcriptions`, {
        method: 'POST',
        body: form,
        headers: this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {},
        signal: AbortSignal.any([request.signal, timeout]),
      });
    } catch (err) {
      if (request.signal.aborted) throw request.signal.reason;
      if (timeout.aborted) throw new ProviderError(this.name, 'timeout', 'the transcription server did not answer in time');
      throw new ProviderError(this.name, 'failed', `could not reach the transcription server: ${(err as Error).message}`);
    }
    if (res.status === 401 || res.status === 403) {
      await res.body?.cancel();
      throw new ProviderError(this.name, 'failed', `upstream rejected the credentials (${res.status})`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new ProviderError(this.name, 'failed', `transcription server answered ${res.status}`);
    }
    let body: VerboseJson;
    try {
      body = (await res.json()) as VerboseJson;
    } catch {
      if (timeout.aborted) throw new ProviderError(this.name, 'timeout', 'the transcription server did not finish in time');
      throw new ProviderError(this.name, 'failed', 'the transcription server sent malformed JSON');
    }
    return this.toResult(body, request);
  }

  private toResult(body: VerboseJson, request: TranscriptionRequest): TranscriptResult {
    if (typeof body.text !== 'string' && !Array.isArray(body.segments)) {
      throw new ProviderError(this.name, 'failed', 'the transcription server answered without text');
    }
    const segments: TranscriptSegment[] = (body.segments ?? [])
      .filter((s) => typeof s.start === 'number' && typeof s.end === 'number' && typeof s.text === 'string')
      .map((s, i) => ({ index: i + 1, start: round3(s.start!), end: round3(s.end!), text: s.text!.trim(), speaker: null }));
    const text = (typeof body.text === 'string' ? body.text : segments.map((s) => s.text).join(' ')).trim();
    const duration = typeof body.duration === 'number' ? body.duration : (segments.at(-1)?.end ?? request.durationSeconds);
    return {
      language: languageCode(body.language) ?? request.language,
      durationSeconds: round3(duration),
      text,
      segments,
    };
  }
}
