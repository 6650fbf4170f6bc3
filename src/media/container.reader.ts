import type { InputFormat, Source } from 'mediabunny';
import type { StreamFacts } from './ffmpeg.js';

/**
 * What the in-process reader could not read (a container or codec it does not know, or bytes that
 * are not what they claim): ffprobe may still. Failures to fetch are not this: they end the read.
 */
export class UnreadableContainerError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UnreadableContainerError';
  }
}

/** Where the bytes come from: a file read in parts over the network (size known), or bytes in memory. */
export interface ByteSource {
  size: number;
  /** The bytes [start, end): whole, or as a stream of pieces that add up to them. */
  read(start: number, end: number): Promise<Uint8Array | ReadableStream<Uint8Array>>;
  /** Throws for a part the source will not load, before the parser makes room for it. */
  check?(start: number, end: number): void;
}

/**
 * The library and what is read with it, loaded on the first read (a process that never parses,
 * the CLI, does not pay for it). HLS is left out of the containers on purpose: it would open the
 * files a playlist names, and every URL must go through the guarded client (playlists are read by
 * the manifest reader, their segments handed over as bytes).
 */
let library: Promise<Library> | undefined;
interface Library {
  mediabunny: typeof import('mediabunny');
  formats: InputFormat[];
  /** ffprobe's names for the containers, so an answer does not depend on which reader gave it. */
  formatNames: Map<InputFormat, string>;
}
const load = (): Promise<Library> =>
  (library ??= import('mediabunny').then((mediabunny) => {
    const { MP4, QTFF, MATROSKA, WEBM, MP3, WAVE, OGG, FLAC, ADTS, MPEG_TS } = mediabunny;
    const formatNames = new Map<InputFormat, string>([
      [MP4, 'mov,mp4,m4a,3gp,3g2,mj2'],
      [QTFF, 'mov,mp4,m4a,3gp,3g2,mj2'],
      [MATROSKA, 'matroska,webm'],
      [WEBM, 'matroska,webm'],
      [MP3, 'mp3'],
      [WAVE, 'wav'],
      [OGG, 'ogg'],
      [FLAC, 'flac'],
      [ADTS, 'aac'],
      [MPEG_TS, 'mpegts'],
    ]);
    return { mediabunny, formats: [...formatNames.keys()], formatNames };
  }));

/** ffprobe's names for the codecs mediabunny names. */
const CODEC_NAMES: Record<string, string> = {
  avc: 'h264',
  hevc: 'hevc',
  vp8: 'vp8',
  vp9: 'vp9',
  av1: 'av1',
  prores: 'prores',
  aac: 'aac',
  opus: 'opus',
  mp3: 'mp3',
  vorbis: 'vorbis',
  flac: 'flac',
  ac3: 'ac3',
  eac3: 'eac3',
  dts: 'dts',
  'pcm-s16': 'pcm_s16le',
  'pcm-s16be': 'pcm_s16be',
  'pcm-s24': 'pcm_s24le',
  'pcm-s24be': 'pcm_s24be',
  'pcm-s32': 'pcm_s32le',
  'pcm-s32be': 'pcm_s32be',
  'pcm-f32': 'pcm_f32le',
  'pcm-f32be': 'pcm_f32be',
  'pcm-f64': 'pcm_f64le',
  'pcm-f64be': 'pcm_f64be',
  'pcm-u8': 'pcm_u8',
  'pcm-s8': 'pcm_s8',
  ulaw: 'pcm_mulaw',
  alaw: 'pcm_alaw',
};

export interface ContainerReadOptions {
  /** Whether the length is wanted (an HLS segment's comes from its playlist, and costs a scan to compute). */
  duration?: boolean;
  signal?: AbortSignal;
}

/**
 * The streams of a media file read in process: size, length, codecs (ffprobe's names) and sound,
 * from the container's own header (an MP4's moov box, a WebM's tracks, an MP3's first frames)
 * through `source`, which fetches only the parts asked for. Throws UnreadableContainerError for
 * what it cannot read, and whatever `source` throws when a part cannot be had.
 */
export async function readContainer(bytes: ByteSource | Uint8Array, options: ContainerReadOptions = {}): Promise<StreamFacts> {
  const { mediabunny, formats, formatNames } = await load();
  const { BufferSource, CustomSource, Input, UnsupportedInputFormatError } = mediabunny;
  const size = bytes instanceof Uint8Array ? bytes.length : bytes.size;
  let fetchFailure: unknown = null;
  const source: Source =
    bytes instanceof Uint8Array
      ? new BufferSource(bytes)
      : new CustomSource({
          getSize: () => bytes.size,
          read: (start, end) =>
            bytes.read(start, end).catch((err: unknown) => {
              fetchFailure ??= err;
              throw err;
            }),
          // The reader fetches in blocks of its own; a failure outside a pending read is already kept.
          handleUnhandledError: () => undefined,
          // The bytes live in one place, the byte source, which counts them; a cache here would keep copies nobody counts.
          maxCacheSize: 0,
        });
  // Each Source makes a FinalizationRegistry for references left unfreed; this one's are freed in
  // `finally`, and the registry's weak cells cost a full collection every few hundred reads.
  dropFinalizationRegistry(source);
  if (!(bytes instanceof Uint8Array) && bytes.check) refuseEarly(source, bytes.check.bind(bytes), (err) => (fetchFailure ??= err));
  const input = new Input({ source, formats });
  try {
    const read = async (): Promise<StreamFacts> => {
      const format = await input.getFormat();
      const [video, audio] = await Promise.all([input.getPrimaryVideoTrack(), input.getPrimaryAudioTrack()]);
      if (!video && !audio) throw new UnreadableContainerError('no video or audio track');
      const [videoCodec, audioCodec] = [video?.codec, audio?.codec].map((c) =>
        c === undefined ? undefined : c === null ? null : (CODEC_NAMES[c] ?? null),
      );
      if (videoCodec === null || audioCodec === null) throw new UnreadableContainerError('a codec the in-process reader does not name');
      const tracks = [video, audio].filter((t) => !!t);
      let duration: number | null = null;
      if (options.duration !== false) {
        duration = await input.getDurationFromMetadata(tracks);
        // Without a stated length (an MPEG-TS file), from the first packet to the end of the last, as ffprobe counts.
        if (duration === null) duration = (await input.computeDuration(tracks)) - (await input.getFirstTimestamp(tracks));
      }
      const durationSeconds = duration !== null && Number.isFinite(duration) && duration > 0 ? duration : null;
      return {
        durationSeconds,
        hasAudio: !!audio,
        hasVideo: !!video,
        width: video?.codedWidth || null,
        height: video?.codedHeight || null,
        codecs: [videoCodec, audioCodec].filter(Boolean).join(',') || null,
        // ffprobe's format bit rate where the container states none: the file's bits over its length.
        bitrate: durationSeconds ? Math.round((size * 8) / durationSeconds) : null,
        formatName: formatNames.get(format) ?? format.name,
      };
    };
    return await untilAborted(read(), options.signal);
  } catch (err) {
    if (fetchFailure) throw fetchFailure;
    if (options.signal?.aborted) throw options.signal.reason;
    if (err instanceof UnreadableContainerError) throw err;
    if (err instanceof UnsupportedInputFormatError)
      throw new UnreadableContainerError('a container the in-process reader does not know', { cause: err });
    // Anything else the parser threw: the bytes are not what their container says.
    throw new UnreadableContainerError('the container could not be read', { cause: err });
  } finally {
    input.dispose();
  }
}

/** mediabunny's own field (internal, so looked up, not assumed): without it the source is simply not watched. */
function dropFinalizationRegistry(source: Source): void {
  const watched = source as unknown as { _refFinalizationRegistry?: unknown };
  if ('_refFinalizationRegistry' in watched) watched._refFinalizationRegistry = null;
}

/**
 * mediabunny makes a buffer for a part as soon as the parser asks for it, before the source is
 * asked (a moov box claiming 15 MiB: 15 MiB, zeroed), so a part the source will not load is refused
 * at its own entry point (internal, so looked up, not assumed: without it the source refuses the
 * part itself, after that buffer is made).
 */
function refuseEarly(source: Source, check: (start: number, end: number) => void, failed: (err: unknown) => void): void {
  const entry = source as unknown as { _read?: (start: number, end: number, ...rest: unknown[]) => unknown };
  const read = entry._read;
  if (typeof read !== 'function') return;
  entry._read = (start, end, ...rest) => {
    try {
      check(start, end);
    } catch (err) {
      failed(err);
      return Promise.reject(err);
    }
    return read.call(source, start, end, ...rest);
  };
}

/** The parser may wait on a part that will never come: the caller's deadline ends the wait. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
