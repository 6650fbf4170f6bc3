import { openAsBlob } from 'node:fs';
import { ProviderError } from '../../errors.js';
import type {
  TranscriptResult,
  TranscriptSegment,
  TranscriptWord,
  TranscriptionProvider,
  TranscriptionRequest,
} from './transcription.types.js';
import { roundMs } from './times.js';

export interface DeepgramOptions {
  /** The API origin; the adapter adds /v1/listen (DEEPGRAM_BASE_URL, default https://api.deepgram.com). */
  baseUrl: string;
  apiKey: string;
  model: string;
  timeoutMs: number;
}

/** The parts of Deepgram's pre-recorded response this adapter reads. */
interface ListenResponse {
  metadata?: { duration?: number };
  results?: {
    channels?: { detected_language?: string; alternatives?: { transcript?: string }[] }[];
    utterances?: { start?: number; end?: number; transcript?: string; speaker?: number; words?: DeepgramWord[] }[];
  };
}

/** One word of an utterance, as Deepgram lists it (punctuated_word with smart_format/punctuate). */
interface DeepgramWord {
  word?: string;
  punctuated_word?: string;
  start?: number;
  end?: number;
  speaker?: number;
}

/** The words of an utterance with their times, spelled as punctuated; nothing when Deepgram gave none. */
function wordsOf(words: DeepgramWord[] | undefined): { words?: TranscriptWord[] } {
  const list = (words ?? [])
    .filter((w) => typeof w.start === 'number' && typeof w.end === 'number' && (w.punctuated_word ?? w.word)?.trim())
    .map((w) => ({
      start: roundMs(w.start!),
      end: roundMs(Math.max(w.start!, w.end!)),
      text: (w.punctuated_word ?? w.word)!.trim(),
      speaker: typeof w.speaker === 'number' ? `speaker_${w.speaker}` : null,
    }));
  return list.length ? { words: list } : {};
}

/**
 * Deepgram's pre-recorded `POST /v1/listen`. The gateway uploads the audio it prepared rather than
 * handing Deepgram the caller's URL, so Deepgram never fetches anything on a caller's behalf.
 * Utterances (pauses and speaker turns) become the segments; diarization names the speakers.
 */
export class DeepgramTranscriptionProvider implements TranscriptionProvider {
  readonly name = 'deepgram';

  constructor(private readonly options: DeepgramOptions) {}

  async transcribe(request: TranscriptionRequest): Promise<TranscriptResult> {
    const query = new URLSearchParams({
      model: this.options.model,
      smart_format: 'true',
      punctuate: 'true',
      utterances: 'true',
      diarize: 'true',
    });
    if (request.language) query.set('language', request.language);
    else query.set('detect_language', 'true');
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    let res: Response;
    try {
      res = await fetch(`${this.options.baseUrl.replace(/\/+$/, '')}/v1/listen?${query}`, {
        method: 'POST',
        headers: { authorization: `Token ${this.options.apiKey}`, 'content-type': 'audio/mpeg' },
        body: await openAsBlob(request.audioPath),
        signal: AbortSignal.any([request.signal, timeout]),
        redirect: 'error',
      });
    } catch (err) {
      if (request.signal.aborted) throw request.signal.reason;
      if (timeout.aborted) throw new ProviderError(this.name, 'timeout', 'Deepgram did not answer in time');
      throw new ProviderError(this.name, 'failed', `Deepgram unreachable: ${(err as Error).message}`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      const why = res.status === 401 || res.status === 403 ? 'rejected the credentials' : `answered ${res.status}`;
      throw new ProviderError(this.name, 'failed', `Deepgram ${why}`);
    }
    let body: ListenResponse;
    try {
      body = (await res.json()) as ListenResponse;
    } catch {
      throw new ProviderError(this.name, timeout.aborted ? 'timeout' : 'failed', 'Deepgram sent malformed JSON');
    }
    const channel = body.results?.channels?.[0];
    if (!channel) throw new ProviderError(this.name, 'failed', 'Deepgram answered without results');
    const segments: TranscriptSegment[] = (body.results?.utterances ?? [])
      .filter((u) => typeof u.start === 'number' && typeof u.end === 'number' && u.transcript?.trim())
      .map((u, i) => ({
        index: i + 1,
        start: roundMs(u.start!),
        end: roundMs(u.end!),
        text: u.transcript!.trim(),
        speaker: typeof u.speaker === 'number' ? `speaker_${u.speaker}` : null,
        ...wordsOf(u.words),
      }));
    const text = (channel.alternatives?.[0]?.transcript ?? segments.map((s) => s.text).join(' ')).trim();
    return {
      language: channel.detected_language?.split('-')[0] ?? request.language,
      durationSeconds: typeof body.metadata?.duration === 'number' ? roundMs(body.metadata.duration) : request.durationSeconds,
      text,
      segments,
    };
  }
}
