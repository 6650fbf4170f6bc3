import { spawn } from 'node:child_process';
import { extname, isAbsolute, join } from 'node:path';

/** Why a media file could not be used: it has no sound, cannot be read, or the tool ran out of time. */
export class MediaError extends Error {
  constructor(
    readonly kind: 'no_audio' | 'unreadable' | 'timeout',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'MediaError';
  }
}

/** What ffprobe tells about a local media file. */
export interface MediaProbe {
  durationSeconds: number;
  hasAudio: boolean;
  hasVideo: boolean;
  formatName: string;
}

/** Cancellation and time limit for one run of ffmpeg or ffprobe. */
export interface MediaRunOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Every whole line the tool writes to stderr (filters such as silencedetect report there). */
  onStderrLine?: (line: string) => void;
}

/**
 * Container demuxers the tools may use. Playlist-like demuxers (hls, dash, concat, image2, ...)
 * are left out on purpose: they open further files named inside the media, which would let a
 * crafted download make ffmpeg read other local files.
 */
export const FORMAT_WHITELIST = [
  'mov',
  'matroska',
  'webm',
  'mp3',
  'aac',
  'loas',
  'ogg',
  'wav',
  'w64',
  'flac',
  'flv',
  'live_flv',
  'mpegts',
  'mpeg',
  'avi',
  'asf',
  'amr',
  'amrnb',
  'amrwb',
  'ac3',
  'eac3',
  'dts',
  'truehd',
  'mlp',
  'aiff',
  'caf',
  'au',
  'wv',
  'ape',
  'mpc',
  'mpc8',
  'tta',
  'tak',
  'dsf',
  'voc',
  'xwma',
  'rm',
  'nut',
  'mxf',
  'dv',
  'gxf',
].join(',');

/** Input options shared by both tools: local files only, known containers only. */
const INPUT_GUARDS = ['-protocol_whitelist', 'file', '-format_whitelist', FORMAT_WHITELIST];

/** Keeps the last bytes of stderr: enough for the error line, bounded whatever the tool prints. */
const STDERR_TAIL = 4000;

/** Runs a tool without a shell; kills it on abort or timeout. Resolves with stdout. */
export function runTool(bin: string, args: string[], opts: MediaRunOptions, defaultTimeoutMs: number): Promise<string> {
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? defaultTimeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  if (opts.signal?.aborted) return Promise.reject(opts.signal.reason);
  return new Promise((resolve, reject) => {
    // SIGKILL: a stuck ffmpeg may ignore SIGTERM while it waits on a demuxer.
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], signal, killSignal: 'SIGKILL' });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    let partial = '';
    child.stderr.on('data', (d: Buffer) => {
      const text = d.toString();
      stderr = (stderr + text).slice(-STDERR_TAIL);
      if (!opts.onStderrLine) return;
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) opts.onStderrLine(line);
    });
    // 'error' and 'close' can both fire for one failure; the first one decides.
    let settled = false;
    const settle = (finish: () => void) => {
      if (settled) return;
      settled = true;
      finish();
    };
    const aborted = () => {
      if (opts.signal?.aborted) return opts.signal.reason;
      if (timeout.aborted) return new MediaError('timeout', `${bin} did not finish in time`);
      return undefined;
    };
    child.on('error', (err) => {
      // After an abort the child is being killed: settle on 'close', once it is really gone.
      if (aborted() !== undefined && child.pid !== undefined) return;
      settle(() => reject(aborted() ?? new MediaError('unreadable', `${bin} could not run: ${err.message}`, { cause: err })));
    });
    child.on('close', (code, sig) => {
      if (code === 0) return settle(() => resolve(Buffer.concat(out).toString('utf8')));
      // The reason is rarely on the very last line (ffmpeg adds hints after it): keep a few.
      const last = stderr.trim().split('\n').slice(-3).join(' | ');
      // Killed by a signal that was not ours (OOM killer, operator): fail instead of hanging.
      settle(() =>
        reject(aborted() ?? new MediaError('unreadable', `${bin} ${code === null ? `was killed (${sig})` : `exited ${code}`}: ${last}`)),
      );
    });
  });
}

/** The tools must only read files the gateway wrote itself, never a URL a caller named. */
function localPath(path: string): string {
  if (typeof path !== 'string' || !isAbsolute(path) || /^[a-z][a-z0-9+.-]*:/i.test(path) || path.includes('\0')) {
    throw new MediaError('unreadable', 'only absolute local file paths are accepted');
  }
  return path;
}

interface FfprobeStream {
  codec_type?: string;
  codec_name?: string;
  duration?: string;
  width?: number;
  height?: number;
}
interface FfprobeJson {
  format?: { duration?: string; format_name?: string; bit_rate?: string };
  streams?: FfprobeStream[];
}

/** Everything a probe tells about the streams of a media file. */
export interface StreamFacts {
  durationSeconds: number | null;
  hasAudio: boolean;
  hasVideo: boolean;
  width: number | null;
  height: number | null;
  /** ffprobe's codec names of the video and audio streams, e.g. "h264,aac". */
  codecs: string | null;
  bitrate: number | null;
  formatName: string;
}

/** Codecs ffprobe reports as video streams although they are pictures (cover art in audio files). */
const PICTURE_CODECS = new Set(['mjpeg', 'png', 'bmp', 'gif', 'webp']);

async function ffprobe(input: string, guards: string[], opts: MediaRunOptions & { ffprobePath?: string }): Promise<StreamFacts> {
  const stdout = await runTool(
    opts.ffprobePath ?? process.env.FFPROBE_PATH ?? 'ffprobe',
    ['-v', 'error', ...guards, '-print_format', 'json', '-show_format', '-show_streams', input],
    opts,
    60_000,
  );
  let info: FfprobeJson;
  try {
    info = JSON.parse(stdout) as FfprobeJson;
  } catch (err) {
    throw new MediaError('unreadable', 'ffprobe printed something other than JSON', { cause: err });
  }
  const streams = info.streams ?? [];
  if (!streams.length) throw new MediaError('unreadable', 'not a media file ffprobe can read');
  // Some containers only know the duration per stream ("N/A" on the format): take the longest.
  let duration = Number(info.format?.duration);
  if (!Number.isFinite(duration)) duration = Math.max(...streams.map((s) => Number(s.duration)).filter(Number.isFinite));
  const video = streams.find((s) => s.codec_type === 'video' && !PICTURE_CODECS.has(s.codec_name ?? ''));
  const audio = streams.find((s) => s.codec_type === 'audio');
  const bitrate = Number(info.format?.bit_rate);
  return {
    durationSeconds: Number.isFinite(duration) && duration > 0 ? duration : null,
    hasAudio: !!audio,
    hasVideo: !!video,
    width: video?.width || null,
    height: video?.height || null,
    codecs: [video?.codec_name, audio?.codec_name].filter(Boolean).join(',') || null,
    bitrate: Number.isFinite(bitrate) && bitrate > 0 ? Math.round(bitrate) : null,
    formatName: info.format?.format_name ?? 'unknown',
  };
}

/** Duration and streams of a local media file (ffprobe). */
export async function probeMedia(path: string, opts: MediaRunOptions & { ffprobePath?: string } = {}): Promise<MediaProbe> {
  const facts = await ffprobe(localPath(path), INPUT_GUARDS, opts);
  if (facts.durationSeconds === null) throw new MediaError('unreadable', 'not a media file ffprobe can read');
  return { durationSeconds: facts.durationSeconds, hasAudio: facts.hasAudio, hasVideo: facts.hasVideo, formatName: facts.formatName };
}

/** Streams of a local media file, without requiring a known duration (a first HLS segment, a partial file). */
export function probeLocalStreams(path: string, opts: MediaRunOptions & { ffprobePath?: string } = {}): Promise<StreamFacts> {
  return ffprobe(localPath(path), INPUT_GUARDS, opts);
}

/**
 * Streams of media served by the gateway's own loopback relay (net/probe-relay.ts), which fetches
 * through the guarded client: ffprobe may speak plain HTTP to 127.0.0.1 and nothing else.
 */
export function probeRelayedStreams(relayUrl: string, opts: MediaRunOptions & { ffprobePath?: string } = {}): Promise<StreamFacts> {
  if (!/^http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}$/.test(relayUrl))
    throw new MediaError('unreadable', 'only the loopback relay may be probed over HTTP');
  // Bounded reads: the relay caps bytes; these keep ffprobe from analysing more than it needs.
  return ffprobe(
    relayUrl,
    ['-protocol_whitelist', 'http,tcp', '-format_whitelist', FORMAT_WHITELIST, '-probesize', '2000000', '-analyzeduration', '5000000'],
    opts,
  );
}

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
