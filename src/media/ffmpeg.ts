import { spawn } from 'node:child_process';
import { isAbsolute } from 'node:path';

/** Why a media file could not be used. */
export class MediaError extends Error {
  constructor(
    readonly kind: 'no_audio' | 'unreadable' | 'timeout',
    message: string,
  ) {
    super(message);
    this.name = 'MediaError';
  }
}

export interface MediaProbe {
  durationSeconds: number;
  hasAudio: boolean;
  hasVideo: boolean;
  formatName: string;
}

interface RunOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** Runs a tool without a shell; kills it on abort or timeout. */
function run(bin: string, args: string[], opts: RunOptions): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const timeout = AbortSignal.timeout(opts.timeoutMs ?? 120_000);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], signal });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    child.on('error', (err) => {
      if (opts.signal?.aborted) return reject(opts.signal.reason);
      if (timeout.aborted) return reject(new MediaError('timeout', `${bin} did not finish in time`));
      reject(new MediaError('unreadable', `${bin} could not run: ${err.message}`));
    });
    child.on('close', (code) => {
      if (code === 0) resolve({ stdout, stderr });
      else if (code !== null) reject(new MediaError('unreadable', `${bin} exited ${code}: ${stderr.trim().split('\n').at(-1) ?? ''}`));
    });
  });
}

/** ffmpeg and ffprobe only ever read local files the gateway downloaded itself. */
function localPath(path: string): string {
  if (!isAbsolute(path) || /^[a-z][a-z0-9+.-]*:/i.test(path)) throw new MediaError('unreadable', 'only absolute local paths are read');
  return path;
}

/** Duration and streams of a local media file. */
export async function probeMedia(path: string, opts: RunOptions & { ffprobePath?: string } = {}): Promise<MediaProbe> {
  const { stdout } = await run(
    opts.ffprobePath ?? process.env.FFPROBE_PATH ?? 'ffprobe',
    ['-v', 'error', '-protocol_whitelist', 'file', '-print_format', 'json', '-show_format', '-show_streams', localPath(path)],
    opts,
  );
  const info = JSON.parse(stdout) as { format?: { duration?: string; format_name?: string }; streams?: { codec_type?: string; duration?: string }[] };
  const streams = info.streams ?? [];
  const hasAudio = streams.some((s) => s.codec_type === 'audio');
  const hasVideo = streams.some((s) => s.codec_type === 'video');
  const duration = Number(info.format?.duration ?? streams.find((s) => s.duration)?.duration);
  if (!streams.length || !Number.isFinite(duration)) throw new MediaError('unreadable', 'not a media file ffprobe can read');
  return { durationSeconds: duration, hasAudio, hasVideo, formatName: info.format?.format_name ?? 'unknown' };
}

/** The audio track as mono MP3 at 16 kHz: small enough to upload, all speech recognisers need. */
export async function extractAudio(
  input: string,
  output: string,
  opts: RunOptions & { ffmpegPath?: string; sampleRate?: number; bitrate?: string } = {},
): Promise<void> {
  await run(
    opts.ffmpegPath ?? process.env.FFMPEG_PATH ?? 'ffmpeg',
    [
      '-nostdin', '-hide_banner', '-loglevel', 'error', '-y',
      '-protocol_whitelist', 'file',
      '-i', localPath(input),
      '-vn', '-ac', '1', '-ar', String(opts.sampleRate ?? 16_000), '-c:a', 'libmp3lame', '-b:a', opts.bitrate ?? '32k',
      localPath(output),
    ],
    { timeoutMs: opts.timeoutMs ?? 30 * 60_000, signal: opts.signal },
  ).catch((err: unknown) => {
    if (err instanceof MediaError && err.kind === 'unreadable' && /does not contain any stream|matches no streams/i.test(err.message)) {
      throw new MediaError('no_audio', 'the media has no audio track');
    }
    throw err;
  });
}
