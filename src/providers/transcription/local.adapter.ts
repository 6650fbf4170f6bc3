import { dirname, join } from 'node:path';
import { ProviderError } from '../../errors.js';
import { extractAudio } from '../../media/audio-extraction.js';
import { MediaError, runTool } from '../../media/ffmpeg.js';
import type { TranscriptResult, TranscriptSegment, TranscriptionProvider, TranscriptionRequest } from './transcription.types.js';
import { roundMs } from './times.js';

export interface LocalTranscriptionOptions {
  /** pocketsphinx_continuous from the OS packages (pocketsphinx, pocketsphinx-en-us). */
  pocketsphinxPath?: string;
  ffmpegPath?: string;
  timeoutMs: number;
}

/** `word start end confidence`, as pocketsphinx prints with `-time yes`. */
const WORD_LINE = /^(\S+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?)$/;
/** Markers that are not words: sentence bounds, silence, noise. */
const NOT_A_WORD = /^(<s>|<\/s>|<sil>|\[[^\]]*\]|\+\+.*\+\+)$/i;

/**
 * Offline transcription with CMU PocketSphinx and its US-English model: no network, no key,
 * modest accuracy. Each utterance pocketsphinx finds between pauses becomes one segment.
 */
export class LocalTranscriptionProvider implements TranscriptionProvider {
  readonly name = 'local';

  constructor(private readonly options: LocalTranscriptionOptions) {}

  async transcribe(request: TranscriptionRequest): Promise<TranscriptResult> {
    if (request.language && request.language !== 'en') {
      throw new ProviderError(this.name, 'failed', `the local recogniser knows English only, not ${request.language}`);
    }
    const wav = join(dirname(request.audioPath), 'local-16k.wav');
    const run = { signal: request.signal, timeoutMs: this.options.timeoutMs };
    try {
      await extractAudio(request.audioPath, wav, { ...run, codec: 'wav', ffmpegPath: this.options.ffmpegPath });
      const out = await runTool(
        this.options.pocketsphinxPath ?? 'pocketsphinx_continuous',
        ['-infile', wav, '-time', 'yes', '-logfn', '/dev/null'],
        run,
        this.options.timeoutMs,
      );
      const segments = parsePocketsphinx(out);
      return {
        language: 'en',
        durationSeconds: request.durationSeconds,
        text: segments.map((s) => s.text).join(' '),
        segments,
      };
    } catch (err) {
      if (request.signal.aborted) throw request.signal.reason;
      if (err instanceof MediaError) {
        throw new ProviderError(this.name, err.kind === 'timeout' ? 'timeout' : 'failed', `local recognition failed: ${err.message}`, {
          cause: err,
        });
      }
      throw err;
    }
  }
}

/** Segments from pocketsphinx's output: a hypothesis line, then one timed line per word, per utterance. */
export function parsePocketsphinx(output: string): TranscriptSegment[] {
  const segments: TranscriptSegment[] = [];
  let words: { word: string; start: number; end: number }[] = [];
  const flush = () => {
    if (words.length) {
      segments.push({
        index: segments.length + 1,
        start: roundMs(words[0].start),
        end: roundMs(words[words.length - 1].end),
        text: words.map((w) => w.word).join(' '),
        speaker: null,
        words: words.map((w) => ({ start: roundMs(w.start), end: roundMs(Math.max(w.start, w.end)), text: w.word })),
      });
    }
    words = [];
  };
  for (const line of output.split('\n')) {
    const m = WORD_LINE.exec(line.trim());
    if (!m) {
      // A hypothesis line starts the next utterance.
      if (line.trim()) flush();
      continue;
    }
    if (NOT_A_WORD.test(m[1])) continue;
    words.push({ word: m[1].replace(/\(\d+\)$/, ''), start: Number(m[2]), end: Number(m[3]) });
  }
  flush();
  return segments;
}
