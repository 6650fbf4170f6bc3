import { spawn } from 'node:child_process';
import { isAbsolute } from 'node:path';

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
export const INPUT_GUARDS = ['-protocol_whitelist', 'file', '-format_whitelist', FORMAT_WHITELIST];

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
export function localPath(path: string): string {
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
