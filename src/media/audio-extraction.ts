import { extname, join } from 'node:path';
import { INPUT_GUARDS, localPath, MediaError, type MediaRunOptions, runTool } from './ffmpeg.js';

/** The audio a transcription sends: extracted, measured as it is written, cut into pieces (ffmpeg). */

/** A stretch of silence in seconds, as ffmpeg's silencedetect reports it. */
export interface Silence {
  start: number;
  end: number;
}

/** silencedetect's settings: quieter than -35 dB for at least 0.4 s (a pause between sentences). */
const SILENCE_FILTER = 'silencedetect=noise=-35dB:d=0.4';

/** Settings of one audio extraction. */
export type ExtractOptions = MediaRunOptions & {
  ffmpegPath?: string;
  /** Told how many seconds of audio are written, each time ffmpeg reports it (about four times a second). */
  onProgress?: (seconds: number) => void;
  sampleRate?: number;
  bitrate?: string;
  codec?: 'mp3' | 'wav';
  detectSilence?: boolean;
};

/**
 * Audio being written by ffmpeg: how far it has got, the pauses found so far, and the end. MP3 is
 * written packet by packet without a Xing header (constant bit rate), so the part already written
 * can be cut and used while the rest is still being made.
 */
export interface GrowingAudio {
  path: string;
  /** Seconds of audio written so far. */
  reachedSeconds(): number;
  /** Pauses found so far, in order; final once `done` resolves. */
  readonly silences: readonly Silence[];
  /** Resolves once at least `seconds` are written, or the whole audio is; rejects if the extraction fails. */
  waitFor(seconds: number): Promise<void>;
  /** The whole audio is written: its pauses, and its real length (see ExtractedAudio). */
  done: Promise<ExtractedAudio>;
}

/** What one extraction wrote. */
export interface ExtractedAudio {
  silences: Silence[];
  /**
   * The length of the audio written, in seconds: the samples ffmpeg decoded and encoded, counted by
   * its own astats filter (never the length the source's container claims, nor its timestamps).
   */
  seconds: number;
}

/**
 * Starts writing the first audio track of `input` to `output` as mono MP3 (default 16 kHz,
 * 32 kbit/s: small to upload, enough for speech). With `detectSilence`, the same pass also finds
 * the pauses (ffmpeg's silencedetect), so long audio can be cut where nobody speaks at no extra
 * decoding, and cut while it is still being written.
 */
export function startExtraction(input: string, output: string, opts: ExtractOptions = {}): GrowingAudio {
  const sampleRate = opts.sampleRate ?? 16_000;
  const bitrate = opts.bitrate ?? '32k';
  if (!Number.isInteger(sampleRate) || sampleRate <= 0) throw new RangeError('sampleRate must be a positive integer');
  if (!/^\d+k?$/.test(bitrate)) throw new RangeError('bitrate must look like 32k');
  const args = [
    '-nostdin',
    '-hide_banner',
    '-nostats',
    '-y',
    // silencedetect and astats write at level info; errors still come through, so the failure message stays useful.
    '-loglevel',
    'info',
    '-progress',
    'pipe:2',
    '-stats_period',
    '0.25',
    ...INPUT_GUARDS,
    '-i',
    localPath(input),
    // An explicit map makes "no audio" a clear error instead of an empty output.
    '-map',
    '0:a:0',
    '-vn',
    '-sn',
    '-dn',
    '-map_metadata',
    '-1',
    '-ac',
    '1',
    '-ar',
    String(sampleRate),
    // Resampled first, then timed by the samples themselves (timestamps that restart or jump cannot
    // shorten or stretch the audio), and counted: what astats counts is what is written.
    '-af',
    [
      `aresample=${sampleRate}`,
      'aformat=channel_layouts=mono',
      'asetpts=N/SR/TB',
      ...(opts.detectSilence ? [SILENCE_FILTER] : []),
      'astats=measure_perchannel=none:measure_overall=Number_of_samples',
    ].join(','),
    // WAV (16-bit PCM) is what offline recognisers read; MP3 keeps uploads small.
    ...(opts.codec === 'wav'
      ? ['-c:a', 'pcm_s16le', '-f', 'wav']
      : ['-c:a', 'libmp3lame', '-b:a', bitrate, '-write_xing', '0', '-flush_packets', '1', '-f', 'mp3']),
    localPath(output),
  ];
  const silences: Silence[] = [];
  let open: number | null = null;
  let reached = 0;
  let samples: number | null = null;
  let finished = false;
  let failure: unknown = null;
  const waiters = new Set<{ seconds: number; resolve: () => void; reject: (e: unknown) => void }>();
  const wake = () => {
    for (const w of waiters) {
      if (failure) w.reject(failure);
      else if (finished || reached >= w.seconds) w.resolve();
      else continue;
      waiters.delete(w);
    }
  };
  const onStderrLine = (line: string) => {
    opts.onStderrLine?.(line);
    const progress = /^out_time_us=(\d+)/.exec(line);
    if (progress) {
      reached = Math.max(reached, Number(progress[1]) / 1e6);
      opts.onProgress?.(reached);
      return wake();
    }
    const counted = /\] Number of samples: (\d+)/.exec(line);
    if (counted) samples = Number(counted[1]);
    const start = /silence_start: (-?[\d.]+)/.exec(line);
    if (start) open = Math.max(0, Number(start[1]));
    const end = /silence_end: ([\d.]+)/.exec(line);
    if (end && open !== null) {
      silences.push({ start: open, end: Number(end[1]) });
      open = null;
    }
  };
  const done = runTool(opts.ffmpegPath ?? process.env.FFMPEG_PATH ?? 'ffmpeg', args, { ...opts, onStderrLine }, 30 * 60_000).then(
    () => {
      finished = true;
      wake();
      // astats prints its count at the end; without it (an empty stream), what the progress reached.
      return { silences, seconds: samples === null ? reached : samples / sampleRate };
    },
    (err: unknown) => {
      failure =
        err instanceof MediaError && err.kind === 'unreadable' && /matches no streams|does not contain any stream/i.test(err.message)
          ? new MediaError('no_audio', 'the media has no audio track', { cause: err })
          : err;
      wake();
      throw failure;
    },
  );
  // Whoever waits on the audio learns of a failure; an unobserved one is not an unhandled rejection.
  done.catch(() => undefined);
  return {
    path: output,
    reachedSeconds: () => reached,
    silences,
    waitFor: (seconds) =>
      new Promise<void>((resolve, reject) => {
        waiters.add({ seconds, resolve, reject });
        wake();
      }),
    done,
  };
}

/** Writes the first audio track of `input` to `output` (see startExtraction) and waits for the end. */
export async function extractAudio(input: string, output: string, opts: ExtractOptions = {}): Promise<ExtractedAudio> {
  return startExtraction(input, output, opts).done;
}

/**
 * Cuts the given stretches (seconds) out of a local audio file by stream copy (so cuts fall on
 * frame boundaries, ~26 ms for MP3), one file each, in order.
 */
export async function cutAudio(
  input: string,
  outDir: string,
  ranges: readonly { start: number; end: number }[],
  opts: MediaRunOptions & { ffmpegPath?: string /** Number of the first piece's file. */; first?: number } = {},
): Promise<{ path: string; start: number; end: number }[]> {
  const ext = extname(input) || '.mp3';
  const first = opts.first ?? 0;
  const pieces = ranges.map((r, i) => ({
    path: join(outDir, `piece-${String(first + i).padStart(4, '0')}${ext}`),
    start: r.start,
    end: r.end,
  }));
  for (const piece of pieces) {
    await runTool(
      opts.ffmpegPath ?? process.env.FFMPEG_PATH ?? 'ffmpeg',
      [
        '-nostdin',
        '-hide_banner',
        '-loglevel',
        'error',
        '-y',
        ...INPUT_GUARDS,
        '-ss',
        piece.start.toFixed(3),
        '-t',
        (piece.end - piece.start).toFixed(3),
        '-i',
        localPath(input),
        '-map',
        '0:a:0',
        '-c',
        'copy',
        '-map_metadata',
        '-1',
        localPath(piece.path),
      ],
      opts,
      10 * 60_000,
    );
  }
  return pieces;
}
