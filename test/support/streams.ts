import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Harness } from './harness.js';

/** What ffprobe reads in a file: its streams' kinds and codecs, and its length. */
export interface Probed {
  streams: { type: string; codec: string }[];
  durationSeconds: number;
  formatName: string;
}

/** ffprobe on bytes (written to a temporary file, as a caller's download would be). */
export function probeBytes(bytes: Buffer, ext = 'bin'): Probed {
  const dir = mkdtempSync(join(tmpdir(), 'mediagate-stream-'));
  try {
    const path = join(dir, `media.${ext}`);
    writeFileSync(path, bytes);
    const out = execFileSync(
      process.env.FFPROBE_PATH ?? 'ffprobe',
      ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', path],
      { encoding: 'utf8' },
    );
    const info = JSON.parse(out) as {
      format: { duration?: string; format_name: string };
      streams: { codec_type: string; codec_name: string; duration?: string }[];
    };
    const durations = [Number(info.format.duration), ...info.streams.map((s) => Number(s.duration))].filter(Number.isFinite);
    return {
      streams: info.streams.map((s) => ({ type: s.codec_type, codec: s.codec_name })),
      durationSeconds: Math.max(0, ...durations),
      formatName: info.format.format_name,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A stream URL's path on the harness (PUBLIC_URL names another port there). */
export function streamPath(url: string): string {
  const path = new URL(url).pathname;
  if (!path.startsWith('/api/streams/')) throw new Error(`not a stream URL: ${url}`);
  return path;
}

/** GETs a stream URL from the harness, whole, with no Authorization header. */
export async function fetchStream(
  h: Harness,
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string>; bytes: Buffer }> {
  const res = await fetch(h.url + streamPath(url), { headers });
  const bytes = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: Object.fromEntries(res.headers.entries()), bytes };
}

/** The MD5 of each video packet of a file, in order: equal lists mean the same bitstream, copied and not re-encoded. */
export function videoPacketHashes(bytes: Buffer, ext = 'mp4'): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'mediagate-stream-'));
  try {
    const path = join(dir, `media.${ext}`);
    writeFileSync(path, bytes);
    const out = execFileSync(
      process.env.FFMPEG_PATH ?? 'ffmpeg',
      ['-v', 'error', '-i', path, '-map', '0:v:0', '-c', 'copy', '-bsf:v', 'h264_mp4toannexb', '-f', 'framemd5', '-'],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    return out
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => l.split(',').pop()!.trim());
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
