import { join } from 'node:path';
import { runTool } from '../src/media/ffmpeg.js';

/**
 * The media of the ordinary pages: real files made by ffmpeg, one of each layout a parse meets,
 * served with Range by the page server. Each page names one of them by a path of its own.
 */
export const ORDINARY_MEDIA = [
  { file: 'moov-first.mp4', type: 'video/mp4', tag: 'og:video' },
  { file: 'moov-last.mp4', type: 'video/mp4', tag: 'og:video' },
  { file: 'clip.webm', type: 'video/webm', tag: 'og:video' },
  { file: 'clip.mp3', type: 'audio/mpeg', tag: 'og:audio' },
] as const;

const SECONDS = 10;
const VIDEO = ['-f', 'lavfi', '-i', `testsrc2=size=640x360:rate=25:duration=${SECONDS}`];
const AUDIO = ['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${SECONDS}`];
const H264_AAC = [
  '-c:v',
  'libx264',
  '-preset',
  'ultrafast',
  '-crf',
  '30',
  '-pix_fmt',
  'yuv420p',
  '-c:a',
  'aac',
  '-b:a',
  '64k',
  '-shortest',
];

/** Makes the four files in `dir` (a few seconds of ffmpeg); returns the directory. */
export async function makeOrdinaryMedia(dir: string, ffmpegPath: string): Promise<string> {
  const run = (args: string[]) => runTool(ffmpegPath, ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...args], {}, 5 * 60_000);
  await run([...VIDEO, ...AUDIO, ...H264_AAC, '-movflags', '+faststart', join(dir, 'moov-first.mp4')]);
  // ffmpeg's default layout: the moov box after the media data.
  await run([...VIDEO, ...AUDIO, ...H264_AAC, join(dir, 'moov-last.mp4')]);
  await run([
    ...VIDEO,
    ...AUDIO,
    '-c:v',
    'libvpx-vp9',
    '-deadline',
    'realtime',
    '-cpu-used',
    '8',
    '-crf',
    '50',
    '-b:v',
    '0',
    '-c:a',
    'libopus',
    '-b:a',
    '48k',
    '-shortest',
    join(dir, 'clip.webm'),
  ]);
  await run([...AUDIO, '-c:a', 'libmp3lame', '-b:a', '64k', join(dir, 'clip.mp3')]);
  return dir;
}
