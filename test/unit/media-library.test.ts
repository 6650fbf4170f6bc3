import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { mediaLibrary, serveLibrary, type MediaLibrary } from '../support/media-library.js';

const run = promisify(execFile);

interface Probe {
  streams: Array<{ codec_type: string; codec_name: string; width?: number; height?: number }>;
  format: { format_name: string; duration: string };
}

async function probe(path: string): Promise<Probe> {
  const { stdout } = await run(process.env.FFPROBE_PATH ?? 'ffprobe', [
    ...['-v', 'error', '-print_format', 'json', '-show_streams', '-show_format', path],
  ]);
  return JSON.parse(stdout) as Probe;
}

describe('media library (real fixtures made with ffmpeg)', () => {
  let lib: MediaLibrary;
  let site: FakeSite;
  const text = (urlPath: string) => readFile(lib.files[urlPath].path, 'utf8');

  beforeAll(async () => {
    lib = await mediaLibrary();
    site = await startFakeSite();
    await serveLibrary(site);
  }, 120_000);

  afterAll(async () => {
    await site?.close();
  });

  it('builds every named fixture once, with its content type', async () => {
    expect(await mediaLibrary()).toBe(lib);
    const expected: Record<string, string> = {
      '/media/av-1080.mp4': 'video/mp4',
      '/media/av-720.mp4': 'video/mp4',
      '/media/av-480.mp4': 'video/mp4',
      '/media/v-1080.mp4': 'video/mp4',
      '/media/v-720.mp4': 'video/mp4',
      '/media/v-480.mp4': 'video/mp4',
      '/media/av-720.webm': 'video/webm',
      '/media/v-720.webm': 'video/webm',
      '/media/audio.mp3': 'audio/mpeg',
      '/media/audio.m4a': 'audio/mp4',
      '/media/cover.jpg': 'image/jpeg',
      '/media/photo-1.jpg': 'image/jpeg',
      '/media/photo-2.jpg': 'image/jpeg',
      '/hls/split/master.m3u8': 'application/vnd.apple.mpegurl',
      '/hls/muxed/master.m3u8': 'application/vnd.apple.mpegurl',
      '/hls/nocodecs/master.m3u8': 'application/vnd.apple.mpegurl',
      '/hls/single/index.m3u8': 'application/vnd.apple.mpegurl',
      '/dash/single/manifest.mpd': 'application/dash+xml',
      '/dash/segmented/manifest.mpd': 'application/dash+xml',
    };
    for (const [urlPath, contentType] of Object.entries(expected)) {
      expect([urlPath, lib.files[urlPath]?.contentType]).toEqual([urlPath, contentType]);
    }
    const segments = Object.keys(lib.files).filter((p) => p.endsWith('.ts'));
    expect(segments.length).toBeGreaterThan(10);
    expect(lib.files[segments[0]].contentType).toBe('video/mp2t');
  });

  it('av-720.mp4 is 1280x720 H.264 with an AAC audio stream, moov after mdat', async () => {
    const { streams } = await probe(lib.files['/media/av-720.mp4'].path);
    const video = streams.filter((s) => s.codec_type === 'video');
    expect(video).toEqual([expect.objectContaining({ codec_name: 'h264', width: 1280, height: 720 })]);
    expect(streams.filter((s) => s.codec_type === 'audio')).toEqual([expect.objectContaining({ codec_name: 'aac' })]);
    const bytes = await readFile(lib.files['/media/av-720.mp4'].path);
    expect(bytes.indexOf('moov')).toBeGreaterThan(bytes.indexOf('mdat'));
  });

  it('the ladder has real heights, and v-*.mp4 have no audio stream', async () => {
    for (const [height, width] of [
      [1080, 1920],
      [720, 1280],
      [480, 854],
    ]) {
      for (const kind of ['av', 'v']) {
        const { streams } = await probe(lib.files[`/media/${kind}-${height}.mp4`].path);
        expect(streams.filter((s) => s.codec_type === 'video')).toEqual([expect.objectContaining({ width, height })]);
        expect(streams.filter((s) => s.codec_type === 'audio')).toHaveLength(kind === 'av' ? 1 : 0);
      }
    }
  });

  it('the webm pair and the audio files carry the right streams', async () => {
    const av = await probe(lib.files['/media/av-720.webm'].path);
    expect(av.streams.map((s) => s.codec_name).sort()).toEqual(['opus', 'vp9']);
    const v = await probe(lib.files['/media/v-720.webm'].path);
    expect(v.streams.map((s) => s.codec_type)).toEqual(['video']);
    expect((await probe(lib.files['/media/audio.mp3'].path)).streams.map((s) => s.codec_name)).toEqual(['mp3']);
    expect((await probe(lib.files['/media/audio.m4a'].path)).streams.map((s) => s.codec_name)).toEqual(['aac']);
    const cover = await probe(lib.files['/media/cover.jpg'].path);
    expect(cover.streams[0]).toEqual(expect.objectContaining({ codec_name: 'mjpeg', width: 1280, height: 720 }));
    const [p1, p2] = await Promise.all(['/media/photo-1.jpg', '/media/photo-2.jpg'].map((p) => readFile(lib.files[p].path)));
    expect(p1.equals(p2)).toBe(false);
  });

  it('split HLS master: one audio rendition with a URI and three video-only variants', async () => {
    const master = await text('/hls/split/master.m3u8');
    const media = master.split('\n').filter((l) => l.startsWith('#EXT-X-MEDIA:'));
    expect(media).toHaveLength(1);
    expect(media[0]).toMatch(/TYPE=AUDIO/);
    const uri = media[0].match(/URI="([^"]+)"/)?.[1];
    expect(lib.files[`/hls/split/${uri}`]).toBeDefined();
    const variants = master.split('\n').filter((l) => l.startsWith('#EXT-X-STREAM-INF:'));
    expect(variants.map((l) => l.match(/RESOLUTION=(\d+x\d+)/)?.[1])).toEqual(['1920x1080', '1280x720', '854x480']);
    for (const line of variants) expect(line).toMatch(/CODECS="avc1\.[0-9a-f]{6},mp4a\.40\.2".*AUDIO="/);
    const variant = await probe(lib.files['/hls/split/720p/seg_000.ts'].path);
    expect(variant.streams.map((s) => s.codec_type)).toEqual(['video']);
  });

  it('muxed, no-CODECS and single HLS playlists', async () => {
    const muxed = await text('/hls/muxed/master.m3u8');
    expect(muxed).not.toMatch(/#EXT-X-MEDIA:/);
    expect(muxed.match(/RESOLUTION=\d+x\d+/g)).toEqual(['RESOLUTION=1280x720', 'RESOLUTION=854x480']);
    expect(muxed).toMatch(/CODECS="/);
    const nocodecs = await text('/hls/nocodecs/master.m3u8');
    expect(nocodecs).not.toMatch(/CODECS/);
    expect(nocodecs.match(/RESOLUTION=\d+x\d+/g)).toHaveLength(2);
    for (const uri of nocodecs.split('\n').filter((l) => l && !l.startsWith('#'))) {
      expect(lib.files[`/hls/nocodecs/${uri}`]).toBeDefined();
    }
    const single = await text('/hls/single/index.m3u8');
    expect(single).toMatch(/#EXTINF:/);
    expect(single).not.toMatch(/#EXT-X-STREAM-INF/);
    const seg = await probe(lib.files['/hls/single/seg_000.ts'].path);
    expect(seg.streams.map((s) => s.codec_type).sort()).toEqual(['audio', 'video']);
  });

  it('DASH: the single-file MPD uses BaseURL, the segmented one SegmentTemplate', async () => {
    const single = await text('/dash/single/manifest.mpd');
    const baseUrls = [...single.matchAll(/<BaseURL>([^<]+)<\/BaseURL>/g)].map((m) => m[1]);
    expect(baseUrls).toHaveLength(4);
    for (const b of baseUrls) expect(lib.files[`/dash/single/${b}`]).toBeDefined();
    expect(single.match(/height="(\d+)"/g)).toEqual(['height="1080"', 'height="720"', 'height="480"']);
    const segmented = await text('/dash/segmented/manifest.mpd');
    expect(segmented).toMatch(/<SegmentTemplate /);
    expect(segmented).not.toMatch(/<BaseURL>/);
    expect(lib.files['/dash/segmented/init-stream0.m4s']).toBeDefined();
    expect(lib.files['/dash/segmented/chunk-stream3-00001.m4s']).toBeDefined();
  });

  it('the fake site serves library files with byte ranges', async () => {
    const url = `${site.origin}/media/av-720.mp4`;
    const whole = await readFile(lib.files['/media/av-720.mp4'].path);
    const size = whole.length;

    const full = await fetch(url);
    expect(full.status).toBe(200);
    expect(full.headers.get('accept-ranges')).toBe('bytes');
    expect(full.headers.get('content-type')).toBe('video/mp4');
    expect(Buffer.from(await full.arrayBuffer()).equals(whole)).toBe(true);

    const cases: Array<[string, number, number]> = [
      ['bytes=100-199', 100, 199],
      [`bytes=${size - 10}-`, size - 10, size - 1],
      ['bytes=-64', size - 64, size - 1],
      [`bytes=0-${size + 1000}`, 0, size - 1],
    ];
    for (const [range, start, end] of cases) {
      const res = await fetch(url, { headers: { range } });
      expect([range, res.status]).toEqual([range, 206]);
      expect(res.headers.get('content-range')).toBe(`bytes ${start}-${end}/${size}`);
      expect(res.headers.get('accept-ranges')).toBe('bytes');
      expect(Number(res.headers.get('content-length'))).toBe(end - start + 1);
      expect(Buffer.from(await res.arrayBuffer()).equals(whole.subarray(start, end + 1))).toBe(true);
    }

    for (const range of [`bytes=${size}-`, `bytes=${size + 5}-${size + 10}`, 'bytes=-0']) {
      const res = await fetch(url, { headers: { range } });
      expect([range, res.status]).toEqual([range, 416]);
      expect(res.headers.get('content-range')).toBe(`bytes */${size}`);
      await res.arrayBuffer();
    }

    // The moov atom sits at the end, so a prober seeks there: a tail read finds it.
    const tail = await fetch(url, { headers: { range: 'bytes=-4096' } });
    expect(Buffer.from(await tail.arrayBuffer()).includes('moov')).toBe(true);
    expect(site.hits.filter((h) => h === 'GET /media/av-720.mp4')).toHaveLength(1 + 4 + 3 + 1);
    expect(site.connections).toBeGreaterThan(0);
  });
});
