import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let ffmpegVersion: string | undefined;

/**
 * Makes a real media file with ffmpeg (a tone, optionally with a test picture) and returns its bytes.
 * Each distinct file is made once per machine and ffmpeg, and kept in the temporary directory.
 */
export function makeMedia(opts: { seconds: number; video?: boolean; audio?: boolean; ext?: string }): Buffer {
  const bin = process.env.FFMPEG_PATH ?? 'ffmpeg';
  const ext = opts.ext ?? (opts.video ? 'mp4' : 'mp3');
  const args = ['-hide_banner', '-loglevel', 'error', '-y'];
  if (opts.audio !== false) args.push('-f', 'lavfi', '-i', `sine=frequency=440:duration=${opts.seconds}`);
  if (opts.video) args.push('-f', 'lavfi', '-i', `testsrc=size=160x120:rate=5:duration=${opts.seconds}`);
  if (opts.video) args.push('-pix_fmt', 'yuv420p');
  if (opts.audio !== false) args.push('-ac', '1');
  ffmpegVersion ??= execFileSync(bin, ['-version'], { encoding: 'utf8' }).split('\n')[0];
  const key = createHash('sha256')
    .update(JSON.stringify([ffmpegVersion, args, ext]))
    .digest('hex')
    .slice(0, 16);
  const kept = join(tmpdir(), `mediagate-media-${key}.${ext}`);
  if (existsSync(kept)) return readFileSync(kept);
  const dir = mkdtempSync(join(tmpdir(), 'mediagate-media-'));
  const out = join(dir, `media.${ext}`);
  try {
    execFileSync(bin, [...args, out], { stdio: 'pipe' });
    // Whole or not at all: a worker beside this one reads it as soon as it is there.
    renameSync(out, kept);
    return readFileSync(kept);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An MP3 ffmpeg makes from a lavfi `source` (then `args`, before the output), made now and returned as bytes. */
export function lavfiMp3(source: string, args: string[]): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'mediagate-lavfi-'));
  try {
    const out = join(dir, 'media.mp3');
    execFileSync(process.env.FFMPEG_PATH ?? 'ffmpeg', [
      '-hide_banner',
      '-loglevel',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      source,
      ...args,
      out,
    ]);
    return readFileSync(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The length ffprobe reads from media bytes (what a provider received), in seconds. */
export function mediaSeconds(bytes: Buffer, ext: string): number {
  const dir = mkdtempSync(join(tmpdir(), 'mediagate-measure-'));
  try {
    const file = join(dir, `received.${ext}`);
    writeFileSync(file, bytes);
    const out = execFileSync(
      process.env.FFPROBE_PATH ?? 'ffprobe',
      ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', file],
      { encoding: 'utf8' },
    );
    return Number(out.trim());
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * MPEG-TS segments whose clocks each start again at zero, concatenated (as a careless or hostile
 * HLS download would be): ffprobe reads the length from the last segment's clock, so the file claims
 * about `seconds.at(-1)` while it holds their sum.
 */
export function restartingClocksTs(seconds: readonly number[]): Buffer {
  return Buffer.concat(seconds.map((s) => makeMedia({ seconds: s, ext: 'ts' })));
}
