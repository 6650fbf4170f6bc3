import { readContainer } from '../../src/media/container.reader.js';
import { probeRelayedStreams, type StreamFacts } from '../../src/media/ffmpeg.js';
import { GuardedHttpClient } from '../../src/net/guarded-client.js';
import { withProbeRelay } from '../../src/net/probe-relay.js';
import { RangeReader } from '../../src/net/range-reader.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { serveLibrary, type MediaLibrary } from '../support/media-library.js';

/**
 * The in-process reader and ffprobe, side by side on every media file of the parse matrix's
 * library (made by ffmpeg: progressive MP4 with and without sound, WebM, MP3, M4A, DASH's one-file
 * representations, its initialisation and media segments, HLS's MPEG-TS segments), each read
 * over HTTP through the guarded client as a parse reads it: the same size, length (within 0.1 s),
 * codecs and sound, or neither can read it. An MPEG-TS segment's length is its playlist's in a
 * parse (neither reader's is used): there the in-process reader is held to the playlist, as
 * ffprobe cannot be (it makes the 1.0 s audio segments 0.7 s long).
 */

const MEDIA = /\.(mp4|webm|mp3|m4a|ts|m4s)$/;
const LIMITS = { maxBytes: 16 * 1024 * 1024, timeoutMs: 10_000 };

describe('the in-process reader and ffprobe', () => {
  let site: FakeSite;
  let library: MediaLibrary;
  let client: GuardedHttpClient;

  beforeAll(async () => {
    site = await startFakeSite();
    library = await serveLibrary(site);
    client = new GuardedHttpClient({ allowHosts: [site.hostPort] });
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    await site?.close();
  });

  const inProcess = async (url: string): Promise<StreamFacts | null> => {
    const signal = AbortSignal.timeout(LIMITS.timeoutMs);
    const ranges = new RangeReader(client, url, { ...LIMITS, signal });
    try {
      await ranges.open();
      return await readContainer(ranges, { signal });
    } catch {
      return null;
    }
  };
  const ffprobe = async (url: string): Promise<StreamFacts | null> => {
    const signal = AbortSignal.timeout(LIMITS.timeoutMs);
    try {
      return await withProbeRelay(client, url, { ...LIMITS, signal }, (relay) => probeRelayedStreams(relay, { signal }));
    } catch {
      return null;
    }
  };
  /** A segment's length as its playlist (index.m3u8 beside it) states it. */
  const playlistLength = async (url: string): Promise<number | null> => {
    const playlist = await (await fetch(new URL('index.m3u8', url))).text();
    const name = new URL(url).pathname.split('/').pop()!;
    const match = new RegExp(`#EXTINF:([\\d.]+),\\s*${name.replace('.', '\\.')}`).exec(playlist);
    return match ? Number(match[1]) : null;
  };
  const comparable = (f: StreamFacts | null) =>
    f && {
      width: f.width,
      height: f.height,
      codecs: f.codecs,
      hasAudio: f.hasAudio,
      hasVideo: f.hasVideo,
      durationKnown: f.durationSeconds !== null,
    };

  it('covers the whole library', () => {
    const files = Object.keys(library.files).filter((p) => MEDIA.test(p));
    expect(files.length).toBeGreaterThanOrEqual(40);
    for (const kind of ['.mp4', '.webm', '.mp3', '.m4a', '.ts', '.m4s']) expect(files.some((p) => p.endsWith(kind))).toBe(true);
  });

  it('reads every file alike', async () => {
    const files = Object.keys(library.files)
      .filter((p) => MEDIA.test(p))
      .sort();
    const differences: string[] = [];
    let readByBoth = 0;
    for (const path of files) {
      const url = site.origin + path;
      const [ours, theirs] = [await inProcess(url), await ffprobe(url)];
      const segment = path.endsWith('.ts');
      const shown = (f: StreamFacts | null) => JSON.stringify(f && { ...comparable(f), ...(segment && { durationKnown: undefined }) });
      if (shown(ours) !== shown(theirs)) {
        differences.push(`${path}: in process ${shown(ours)}, ffprobe ${shown(theirs)}`);
        continue;
      }
      if (!ours || !theirs) continue;
      readByBoth++;
      const truth = segment ? await playlistLength(url) : theirs.durationSeconds;
      if (ours.durationSeconds !== null && truth !== null && Math.abs(ours.durationSeconds - truth) > 0.1) {
        differences.push(`${path}: length ${ours.durationSeconds} in process, ${truth} by ${segment ? 'its playlist' : 'ffprobe'}`);
      }
    }
    expect(differences).toEqual([]);
    // Only media segments without their initialisation section are beyond both.
    expect(readByBoth).toBe(files.filter((p) => !/chunk-stream\d+-\d+\.m4s$/.test(p)).length);
  }, 120_000);
});
