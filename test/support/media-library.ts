import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { FakeSite } from '../fakes/site.fake.js';
import { cachedPath } from './fixture-cache.js';

const run = promisify(execFile);

export interface LibraryFile {
  /** Absolute path on disk. */
  path: string;
  contentType: string;
}

export interface MediaLibrary {
  /** The temp dir everything was built in; its layout mirrors the URL paths. */
  dir: string;
  /** Keyed by URL path, e.g. '/media/av-720.mp4'. */
  files: Record<string, LibraryFile>;
}

/** Served content type by file extension; a file with any other extension is a build mistake. */
const CONTENT_TYPES: Record<string, string> = {
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.mp3': 'audio/mpeg',
  '.m4a': 'audio/mp4',
  '.jpg': 'image/jpeg',
  '.m3u8': 'application/vnd.apple.mpegurl',
  '.ts': 'video/mp2t',
  '.m4s': 'video/iso.segment',
  '.mpd': 'application/dash+xml',
};

/** The ladder: real pixel sizes, so a prober reads these heights. 854x480 is not exactly 16:9. */
const LADDER = [
  { height: 1080, width: 1920 },
  { height: 720, width: 1280 },
  { height: 480, width: 854 },
] as const;

const SECONDS = 2;
const FPS = 5;
/** Parallel ffmpeg processes. */
const PARALLEL = 2;

let building: Promise<MediaLibrary> | undefined;

/**
 * Every fixture, made with ffmpeg once per machine (see libraryDir), and where each one lives;
 * read once per module instance (jest gives each test file its own registry).
 */
export function mediaLibrary(): Promise<MediaLibrary> {
  if (!building) {
    building = build();
    building.catch(() => {
      building = undefined;
    });
  }
  return building;
}

/** Registers every library file on a FakeSite under the same URL paths. */
export async function serveLibrary(site: FakeSite): Promise<MediaLibrary> {
  const library = await mediaLibrary();
  for (const [urlPath, file] of Object.entries(library.files)) {
    site.fileFromDisk(urlPath, file.path, file.contentType);
  }
  return library;
}

function ffmpeg(args: string[]): Promise<unknown> {
  const bin = process.env.FFMPEG_PATH ?? 'ffmpeg';
  return run(bin, ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...args], {
    maxBuffer: 16 * 1024 * 1024,
  }).catch((err: Error & { stderr?: string }) => {
    throw new Error(`ffmpeg ${args.join(' ')} failed: ${err.stderr || err.message}`);
  });
}

/** Runs at most `n` tasks at a time. */
function limiter(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: Array<() => void> = [];
  const next = () => {
    if (active >= n) return;
    const start = queue.shift();
    if (start) {
      active += 1;
      start();
    }
  };
  return (task) =>
    new Promise((resolve, reject) => {
      queue.push(() => {
        task()
          .then(resolve, reject)
          .finally(() => {
            active -= 1;
            next();
          });
      });
      next();
    });
}

const videoIn = (w: number, h: number) => ['-f', 'lavfi', '-i', `testsrc2=size=${w}x${h}:rate=${FPS}:duration=${SECONDS}`];
const audioIn = (freq = 440) => ['-f', 'lavfi', '-i', `sine=frequency=${freq}:sample_rate=48000:duration=${SECONDS}`];
/** H.264, a keyframe every second so 1-second HLS/DASH segments cut cleanly. */
const H264 = [
  '-c:v',
  'libx264',
  '-preset',
  'ultrafast',
  '-crf',
  '40',
  '-pix_fmt',
  'yuv420p',
  '-g',
  `${FPS}`,
  '-keyint_min',
  `${FPS}`,
  '-sc_threshold',
  '0',
];
const AAC = ['-c:a', 'aac', '-b:a', '64k', '-ac', '2'];

/**
 * The library is made once per machine for this file's recipe and this ffmpeg, and kept in the
 * temporary directory: parallel workers and later runs share it.
 */
async function libraryDir(): Promise<string> {
  const recipe = await readFile(fileURLToPath(import.meta.url));
  const { stdout: version } = await run(process.env.FFMPEG_PATH ?? 'ffmpeg', ['-version']);
  const key = createHash('sha256').update(recipe).update(version.split('\n')[0]).digest('hex').slice(0, 16);
  return cachedPath(join(tmpdir(), `mediagate-lib-${key}`), encode);
}

/** Encodes every fixture with ffmpeg into `dir`. */
async function encode(dir: string): Promise<void> {
  const at = (urlPath: string) => join(dir, ...urlPath.split('/').filter(Boolean));
  for (const sub of ['/media', '/hls/split', '/hls/muxed', '/hls/single', '/dash/single', '/dash/segmented']) {
    await mkdir(at(sub), { recursive: true });
  }
  const limit = limiter(PARALLEL);
  const task = (args: string[]) => limit(() => ffmpeg(args));

  // Encodes. Progressive mp4s keep ffmpeg's default layout: moov after mdat (no +faststart).
  const av = new Map(
    LADDER.map(({ width, height }) => [
      height,
      task([...videoIn(width, height), ...audioIn(), ...H264, ...AAC, '-shortest', at(`/media/av-${height}.mp4`)]),
    ]),
  );
  const avWebm = task([
    ...videoIn(1280, 720),
    ...audioIn(),
    ...['-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-crf', '50', '-b:v', '0', '-g', `${FPS}`],
    ...['-pix_fmt', 'yuv420p', '-c:a', 'libopus', '-b:a', '48k', '-shortest'],
    at('/media/av-720.webm'),
  ]);
  const others = [
    task([...audioIn(330), '-c:a', 'libmp3lame', '-b:a', '64k', at('/media/audio.mp3')]),
    task(['-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=1', '-frames:v', '1', '-q:v', '5', at('/media/cover.jpg')]),
    task(['-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=1', '-frames:v', '1', '-q:v', '5', at('/media/photo-1.jpg')]),
    task(['-f', 'lavfi', '-i', 'smptehdbars=size=320x240:rate=1', '-frames:v', '1', '-q:v', '5', at('/media/photo-2.jpg')]),
  ];

  // Remuxes of the encodes above: no second encode anywhere below.
  const after = (deps: Promise<unknown>[], args: string[]) => Promise.all(deps).then(() => task(args));
  const ladderIn = LADDER.flatMap(({ height }) => ['-i', at(`/media/av-${height}.mp4`)]);
  const ladderDeps = [...av.values()];
  // The hls muxer reads CODECS from Annex B extradata; mp4 input carries avcC, hence the bsf.
  const HLS = [
    '-c',
    'copy',
    '-bsf:v',
    'h264_mp4toannexb',
    '-f',
    'hls',
    '-hls_time',
    '1',
    '-hls_playlist_type',
    'vod',
    '-hls_segment_type',
    'mpegts',
  ];
  // dashenc insists on one picture aspect ratio per adaptation set; 854x480 is 427:240, so the
  // 480p representation is signalled 16:9 (sar 1280:1281) without re-encoding.
  const DASH = [
    '-c',
    'copy',
    '-aspect:v:2',
    '16:9',
    '-f',
    'dash',
    '-seg_duration',
    '1',
    '-use_timeline',
    '1',
    '-use_template',
    '1',
    '-adaptation_sets',
    'id=0,streams=v id=1,streams=a',
  ];
  const ladderMaps = ['-map', '0:v', '-map', '1:v', '-map', '2:v', '-map', '0:a'];
  const muxed = after(
    [av.get(720)!, av.get(480)!],
    [
      ...['-i', at('/media/av-720.mp4'), '-i', at('/media/av-480.mp4')],
      ...['-map', '0:v', '-map', '0:a', '-map', '1:v', '-map', '1:a', ...HLS],
      ...['-hls_segment_filename', at('/hls/muxed/%v/seg_%03d.ts'), '-master_pl_name', 'master.m3u8'],
      ...['-var_stream_map', 'v:0,a:0,name:720p v:1,a:1,name:480p', at('/hls/muxed/%v/index.m3u8')],
    ],
  );
  const remuxes = [
    ...LADDER.map(({ height }) =>
      after([av.get(height)!], ['-i', at(`/media/av-${height}.mp4`), '-map', '0:v', '-c', 'copy', at(`/media/v-${height}.mp4`)]),
    ),
    after([avWebm], ['-i', at('/media/av-720.webm'), '-map', '0:v', '-c', 'copy', at('/media/v-720.webm')]),
    after([av.get(720)!], ['-i', at('/media/av-720.mp4'), '-map', '0:a', '-c', 'copy', '-f', 'mp4', at('/media/audio.m4a')]),
    after(ladderDeps, [
      ...ladderIn,
      ...ladderMaps,
      ...HLS,
      ...['-hls_segment_filename', at('/hls/split/%v/seg_%03d.ts'), '-master_pl_name', 'master.m3u8'],
      '-var_stream_map',
      'v:0,agroup:aud,name:1080p v:1,agroup:aud,name:720p v:2,agroup:aud,name:480p a:0,agroup:aud,default:yes,language:en,name:audio',
      at('/hls/split/%v/index.m3u8'),
    ]),
    after(
      [av.get(720)!],
      [
        ...['-i', at('/media/av-720.mp4'), ...HLS],
        ...['-hls_segment_filename', at('/hls/single/seg_%03d.ts'), at('/hls/single/index.m3u8')],
      ],
    ),
    after(ladderDeps, [...ladderIn, ...ladderMaps, ...DASH, '-single_file', '1', at('/dash/single/manifest.mpd')]),
    after(ladderDeps, [...ladderIn, ...ladderMaps, ...DASH, at('/dash/segmented/manifest.mpd')]),
    // Real servers often omit CODECS: the muxed ladder again, with the attribute stripped.
    muxed.then(async () => {
      await cp(at('/hls/muxed'), at('/hls/nocodecs'), { recursive: true });
      const master = await readFile(at('/hls/nocodecs/master.m3u8'), 'utf8');
      const stripped = master.replace(/,CODECS="[^"]*"/g, '');
      if (stripped === master) throw new Error('expected ffmpeg to write CODECS in /hls/muxed/master.m3u8');
      await writeFile(at('/hls/nocodecs/master.m3u8'), stripped);
    }),
  ];
  await Promise.all([...ladderDeps, avWebm, ...others, muxed, ...remuxes]);
}

async function build(): Promise<MediaLibrary> {
  const dir = await libraryDir();
  const files: Record<string, LibraryFile> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const contentType = CONTENT_TYPES[extname(entry.name)];
    if (!contentType) throw new Error(`media library: no content type for ${path}`);
    files[`/${relative(dir, path).split(sep).join('/')}`] = { path, contentType };
  }
  return { dir, files };
}
