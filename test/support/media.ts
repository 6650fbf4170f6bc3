import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Makes a real media file with ffmpeg (a tone, optionally with a test picture) and returns its bytes. */
export function makeMedia(opts: { seconds: number; video?: boolean; audio?: boolean; ext?: string }): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'mediagate-media-'));
  const out = join(dir, `media.${opts.ext ?? (opts.video ? 'mp4' : 'mp3')}`);
  const args = ['-hide_banner', '-loglevel', 'error', '-y'];
  if (opts.audio !== false) args.push('-f', 'lavfi', '-i', `sine=frequency=440:duration=${opts.seconds}`);
  if (opts.video) args.push('-f', 'lavfi', '-i', `testsrc=size=160x120:rate=5:duration=${opts.seconds}`);
  if (opts.video) args.push('-pix_fmt', 'yuv420p');
  args.push('-ac', '1', out);
  if (opts.audio === false) args.splice(args.indexOf('-ac'), 2);
  try {
    execFileSync(process.env.FFMPEG_PATH ?? 'ffmpeg', args, { stdio: 'pipe' });
    return readFileSync(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
