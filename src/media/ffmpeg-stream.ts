import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { FORMAT_WHITELIST } from './ffmpeg.js';

/** One input of a streamed ffmpeg run. */
export type StreamInput =
  /** A single file served by the gateway's loopback relay (net/probe-relay.ts). */
  | { relayUrl: string }
  /**
   * An HLS or DASH manifest: ffmpeg fetches it and its segments itself, every connection through the
   * guarded forward proxy (net/guarded-proxy.ts), with the source's request headers.
   */
  | { manifestUrl: string; proxyUrl: string; headers: Record<string, string> };

/** An ffmpeg process writing its output to a pipe. */
export interface FfmpegStream {
  stdout: Readable;
  /** Resolves when the process is gone: its exit code (null when killed) and the last lines it wrote. */
  exited: Promise<{ code: number | null; stderr: string }>;
  /** Kills it at once (SIGKILL: a demuxer waiting on the network may ignore SIGTERM). */
  kill(): void;
  pid: number | undefined;
}

/**
 * Lines after which a manifest's output is no longer whole: a segment or key that could not be
 * fetched. ffmpeg's HLS and DASH demuxers skip such a segment and go on; a stream must not.
 */
const LOST_SEGMENT =
  /Failed to open (segment|fragment)|Failed to reload playlist|Unable to open key file|Error when loading first (segment|fragment)|HTTP error \d+|Server returned \d/i;

const STDERR_TAIL = 4000;

/** A read that waits longer than this for the network fails (µs): a stalled source cuts its stream instead of holding an ffmpeg slot. */
const READ_TIMEOUT = ['-rw_timeout', String(30_000_000)];
const RELAY_URL = /^http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}$/;

function inputArgs(input: StreamInput): string[] {
  if ('relayUrl' in input) {
    if (!RELAY_URL.test(input.relayUrl)) throw new Error('only the loopback relay may be read over HTTP');
    return ['-protocol_whitelist', 'http,tcp', '-format_whitelist', FORMAT_WHITELIST, ...READ_TIMEOUT, '-i', input.relayUrl];
  }
  const { 'user-agent': userAgent, ...rest } = input.headers;
  const headers = Object.entries(rest)
    .filter(([name, value]) => /^[A-Za-z0-9-]+$/.test(name) && !/[\r\n]/.test(value))
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return [
    // No file protocol: a playlist may name only network URLs, and every one goes through the proxy.
    '-protocol_whitelist',
    'http,https,tcp,tls,httpproxy,crypto',
    '-format_whitelist',
    `${FORMAT_WHITELIST},hls,dash,webvtt`,
    '-http_proxy',
    input.proxyUrl,
    ...READ_TIMEOUT,
    ...(headers ? ['-headers', headers] : []),
    ...(userAgent ? ['-user_agent', userAgent] : []),
    '-i',
    input.manifestUrl,
  ];
}

/**
 * Starts ffmpeg on the inputs with the output options, writing to its stdout as it goes (never a
 * file, never buffered whole). `onLostSegment` is told when a manifest's segment could not be had.
 */
export function startFfmpegStream(
  inputs: readonly StreamInput[],
  output: readonly string[],
  opts: { ffmpegPath?: string; onLostSegment?: (line: string) => void } = {},
): FfmpegStream {
  const args = [
    '-nostdin',
    '-hide_banner',
    '-nostats',
    '-loglevel',
    'warning',
    ...inputs.flatMap(inputArgs),
    ...output,
    '-map_metadata',
    '-1',
    'pipe:1',
  ];
  // Its own environment: no proxy or no_proxy of the gateway's may route it around the guarded proxy.
  const child = spawn(opts.ffmpegPath ?? process.env.FFMPEG_PATH ?? 'ffmpeg', args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });
  let stderr = '';
  let partial = '';
  child.stderr.on('data', (d: Buffer) => {
    const text = d.toString();
    stderr = (stderr + text).slice(-STDERR_TAIL);
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (LOST_SEGMENT.test(line)) opts.onLostSegment?.(line);
  });
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) => {
    child.on('error', () => resolve({ code: -1, stderr }));
    child.on('close', (code) => resolve({ code, stderr }));
  });
  return {
    stdout: child.stdout,
    exited,
    pid: child.pid,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
