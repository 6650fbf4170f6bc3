import { type ExtractedAudio, startExtraction } from '../../media/audio-extraction.js';

/** Seconds past what the hold covers that the extraction may run before the hold is raised. */
const MARGIN_SECONDS = 1;

export interface PaidAudioOptions {
  /** The downloaded media. */
  source: string;
  /** Where the prepared audio (mono MP3) is written. */
  audioPath: string;
  ffmpegPath?: string;
  signal: AbortSignal;
  /** Credits per started minute (0: transcriptions are free, nothing is raised while the audio grows). */
  perMinute: number;
  /** The price of so many seconds of audio. */
  price: (seconds: number) => number;
  /** What the job holds already. */
  held: number;
  /** Raises the job's hold by so many credits (402 when the account cannot cover it). */
  extendHold: (extra: number) => Promise<void>;
  /** Asked as the audio grows whether the disk may take so many seconds of it; false stops the extraction with `refused()`. */
  mayWrite?: (seconds: number) => boolean;
  refused?: () => Error;
}

/** The prepared audio and the hold that pays for exactly it. */
export interface PaidAudio extends ExtractedAudio {
  held: number;
}

/**
 * Prepares the audio a transcription will send, and holds its price before anything is sent. The
 * price is the prepared audio's real length (the samples ffmpeg wrote), never what the source's
 * container claims: while the audio grows past what the hold covers, the hold is raised (so a file
 * whose clocks restart, claiming 2 s and holding hours, is stopped as soon as the account cannot pay
 * for more, with 402), and once it is complete the hold is raised to its exact price. Raised only
 * as far as the audio certainly reaches, so the hold never passes the final price, which the
 * capture charges whole.
 */
export async function preparePaidAudio(opts: PaidAudioOptions): Promise<PaidAudio> {
  const stop = new AbortController();
  const growing = startExtraction(opts.source, opts.audioPath, {
    signal: AbortSignal.any([opts.signal, stop.signal]),
    ffmpegPath: opts.ffmpegPath,
    detectSilence: true,
    onProgress: (seconds) => {
      if (opts.mayWrite && !opts.mayWrite(seconds)) stop.abort(opts.refused?.() ?? new Error('no room for the audio'));
    },
  });
  let held = opts.held;
  const raiseTo = async (seconds: number) => {
    const extra = opts.price(seconds) - held;
    if (extra <= 0) return;
    await opts.extendHold(extra);
    held += extra;
  };
  try {
    while (opts.perMinute > 0) {
      const covered = Math.floor(held / opts.perMinute) * 60;
      await growing.waitFor(covered + MARGIN_SECONDS);
      const reached = growing.reachedSeconds();
      // Short of the mark: the extraction ended within what is held.
      if (reached < covered + MARGIN_SECONDS) break;
      // The progress runs a few milliseconds of encoder delay ahead of the samples: the margin keeps the hold behind them.
      await raiseTo(reached - MARGIN_SECONDS);
    }
    const audio = await growing.done;
    await raiseTo(audio.seconds);
    return { ...audio, held };
  } catch (err) {
    // No more audio is made for a task that cannot pay for it or has failed.
    stop.abort(err);
    await growing.done.catch(() => undefined);
    throw err;
  }
}
