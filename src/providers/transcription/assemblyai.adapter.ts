import { openAsBlob } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ProviderError } from '../../errors.js';
import type { TranscriptResult, TranscriptSegment, TranscriptionProvider, TranscriptionRequest } from './transcription.types.js';

export interface AssemblyAiOptions {
  /** The API origin; the adapter adds /v2/... (ASSEMBLYAI_BASE_URL, default https://api.assemblyai.com). */
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  /** How often a queued transcript is polled. */
  pollIntervalMs?: number;
}

/** The parts of AssemblyAI's transcript object this adapter reads (times in milliseconds). */
interface Transcript {
  id: string;
  status: 'queued' | 'processing' | 'completed' | 'error';
  text?: string | null;
  language_code?: string | null;
  audio_duration?: number | null;
  error?: string;
  utterances?: { speaker?: string; text?: string; start?: number; end?: number; words?: AssemblyWord[] }[] | null;
}

interface Sentences {
  sentences?: { text?: string; start?: number; end?: number; speaker?: string | null; words?: AssemblyWord[] }[];
}

const seconds = (ms: number) => Math.round(ms) / 1000;

/** One word as AssemblyAI lists it (times in milliseconds). */
interface AssemblyWord {
  text?: string;
  start?: number;
  end?: number;
  speaker?: string | null;
}

/**
 * AssemblyAI: upload the prepared audio (so AssemblyAI never fetches a caller's URL), create a
 * transcript with speaker labels, poll until it completes. Utterances become the segments; without
 * them, the sentences endpoint does.
 */
export class AssemblyAiTranscriptionProvider implements TranscriptionProvider {
  readonly name = 'assemblyai';

  constructor(private readonly options: AssemblyAiOptions) {}

  async transcribe(request: TranscriptionRequest): Promise<TranscriptResult> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    const signal = AbortSignal.any([request.signal, timeout]);
    try {
      const { upload_url } = await this.call<{ upload_url: string }>('/v2/upload', signal, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: await openAsBlob(request.audioPath),
      });
      let transcript = await this.call<Transcript>('/v2/transcript', signal, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          audio_url: upload_url,
          speaker_labels: true,
          punctuate: true,
          format_text: true,
          ...(request.language ? { language_code: request.language } : { language_detection: true }),
        }),
      });
      while (transcript.status === 'queued' || transcript.status === 'processing') {
        await sleep(this.options.pollIntervalMs ?? 3000, undefined, { signal });
        transcript = await this.call<Transcript>(`/v2/transcript/${encodeURIComponent(transcript.id)}`, signal);
      }
      if (transcript.status !== 'completed') {
        // AssemblyAI's error text names the media problem; it stays in our logs, not the caller's answer.
        throw new ProviderError(this.name, 'failed', `AssemblyAI failed the transcript: ${transcript.error ?? transcript.status}`);
      }
      const segments = transcript.utterances?.length
        ? this.segments(transcript.utterances)
        : this.segments(
            (await this.call<Sentences>(`/v2/transcript/${encodeURIComponent(transcript.id)}/sentences`, signal)).sentences ?? [],
          );
      return {
        language: transcript.language_code?.split('_')[0] ?? request.language,
        durationSeconds: typeof transcript.audio_duration === 'number' ? transcript.audio_duration : request.durationSeconds,
        text: (transcript.text ?? segments.map((s) => s.text).join(' ')).trim(),
        segments,
      };
    } catch (err) {
      if (request.signal.aborted) throw request.signal.reason;
      if (timeout.aborted) throw new ProviderError(this.name, 'timeout', 'AssemblyAI did not finish in time');
      throw err;
    }
  }

  private segments(
    parts: { speaker?: string | null; text?: string; start?: number; end?: number; words?: AssemblyWord[] }[],
  ): TranscriptSegment[] {
    return parts
      .filter((p) => typeof p.start === 'number' && typeof p.end === 'number' && p.text?.trim())
      .map((p, i) => {
        // Word times are milliseconds, like the rest of AssemblyAI's answer.
        const words = (p.words ?? [])
          .filter((w) => typeof w.start === 'number' && typeof w.end === 'number' && w.text?.trim())
          .map((w) => ({
            start: seconds(w.start!),
            end: seconds(Math.max(w.start!, w.end!)),
            text: w.text!.trim(),
            speaker: w.speaker ? `speaker_${w.speaker}` : null,
          }));
        return {
          index: i + 1,
          start: seconds(p.start!),
          end: seconds(p.end!),
          text: p.text!.trim(),
          speaker: p.speaker ? `speaker_${p.speaker}` : null,
          ...(words.length ? { words } : {}),
        };
      });
  }

  private async call<T>(path: string, signal: AbortSignal, init: RequestInit = {}): Promise<T> {
    let res: Response;
    try {
      res = await fetch(this.options.baseUrl.replace(/\/+$/, '') + path, {
        ...init,
        headers: { ...(init.headers as Record<string, string>), authorization: this.options.apiKey },
        signal,
        redirect: 'error',
      });
    } catch (err) {
      if (signal.aborted) throw err;
      throw new ProviderError(this.name, 'failed', `AssemblyAI unreachable: ${(err as Error).message}`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      const why = res.status === 401 || res.status === 403 ? 'rejected the credentials' : `answered ${res.status}`;
      throw new ProviderError(this.name, 'failed', `AssemblyAI ${why} on ${path.split('/').slice(0, 3).join('/')}`);
    }
    try {
      return (await res.json()) as T;
    } catch {
      throw new ProviderError(this.name, 'failed', 'AssemblyAI sent malformed JSON');
    }
  }
}
