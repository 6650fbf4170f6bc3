import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readContainer, UnreadableContainerError } from '../../media/container.reader.js';
import { probeLocalStreams, probeRelayedStreams, type StreamFacts } from '../../media/ffmpeg.js';
import type { GuardedHttpClient } from '../../net/guarded-client.js';
import { withProbeRelay } from '../../net/probe-relay.js';
import { RangeReader, RangesUnsupportedError } from '../../net/range-reader.js';
import { readHls } from './manifest.reader.js';
import type { MediaFormat } from './parse.types.js';
import { ReadCache } from './read.cache.js';

/** Which reader answered a read: the in-process one, or ffprobe for what it could not read. */
export type MediaReader = 'in_process' | 'ffprobe';

export interface ProberOptions {
  client: GuardedHttpClient;
  ffprobePath: string;
  /** Bytes one read may fetch in all (both readers together). */
  maxBytes: number;
  /** Time one read may take (both readers together). */
  timeoutMs: number;
  /** Largest playlist read to find a first segment. */
  manifestMaxBytes: number;
  /** How long a URL's answer is reused (default 60 s), and how many are kept (default 10,000). */
  cacheTtlMs?: number;
  cacheMaxEntries?: number;
  /** Told of every read made: which reader, and whether it learnt the streams. */
  onRead?: (reader: MediaReader, outcome: 'read' | 'failed') => void;
  /** Told of every answer reused instead of read. */
  onReuse?: (how: 'cache' | 'in_flight') => void;
}

/**
 * Finds out what a format really holds (size, length, codecs, sound), reading only through the
 * guarded client: in process, by reading the container's header with Range requests (an MP4's moov
 * box, first or last, a WebM's tracks, an MP3's first frames: a few kilobytes in one or two
 * requests); ffprobe only for what that reader cannot read, through the loopback relay, with what
 * is left of the bytes and time. An HLS playlist is read by its first segment. Each URL is read
 * once at a time and its answer kept briefly. A read that fails or runs out answers null, never an
 * error.
 */
export class MediaProber {
  private readonly reads: ReadCache<StreamFacts | null>;

  constructor(private readonly options: ProberOptions) {
    this.reads = new ReadCache({
      ttlMs: options.cacheTtlMs ?? 60_000,
      maxEntries: options.cacheMaxEntries ?? 10_000,
      timeoutMs: options.timeoutMs,
      onReuse: options.onReuse,
    });
  }

  async probe(format: MediaFormat, signal: AbortSignal): Promise<StreamFacts | null> {
    if (format.container === 'mpd') return null; // a segmented DASH manifest is described by itself
    const playlist = format.container === 'm3u8';
    return this.reads.get(`${playlist ? 'm3u8' : 'file'} ${format.url}`, (deadline) => this.read(format.url, playlist, deadline), signal);
  }

  private async read(url: string, playlist: boolean, signal: AbortSignal): Promise<StreamFacts | null> {
    const started = Date.now();
    const left = () => Math.max(1, this.options.timeoutMs - (Date.now() - started));
    try {
      return playlist ? await this.readPlaylist(url, signal) : await this.readFile(url, signal, left);
    } catch {
      return null;
    }
  }

  /** In process over ranges; ffprobe through the relay when the container (or the server) is beyond that reader. */
  private async readFile(url: string, signal: AbortSignal, left: () => number): Promise<StreamFacts> {
    const { client, maxBytes } = this.options;
    const ranges = new RangeReader(client, url, { maxBytes, signal, timeoutMs: left() });
    try {
      await ranges.open();
      return this.counted('in_process', await readContainer(ranges, { signal }));
    } catch (err) {
      if (!(err instanceof UnreadableContainerError || err instanceof RangesUnsupportedError))
        throw this.counted('in_process', err, 'failed');
      // Every container ffprobe may open is binary: text (an error page served as video) is no media.
      if (err instanceof UnreadableContainerError && looksLikeText(await ranges.head())) throw this.counted('in_process', err, 'failed');
    }
    return this.ffprobe(url, signal, maxBytes - ranges.fetched, left());
  }

  private async ffprobe(url: string, signal: AbortSignal, maxBytes: number, timeoutMs: number): Promise<StreamFacts> {
    try {
      const facts = await withProbeRelay(this.options.client, url, { maxBytes, timeoutMs, signal }, (relay) =>
        probeRelayedStreams(relay, { signal, ffprobePath: this.options.ffprobePath }),
      );
      return this.counted('ffprobe', facts);
    } catch (err) {
      throw this.counted('ffprobe', err, 'failed');
    }
  }

  /** A media playlist's first segment (after its initialisation section), fetched whole and read as a file; its length from the playlist. */
  private async readPlaylist(url: string, signal: AbortSignal): Promise<StreamFacts | null> {
    const { client, manifestMaxBytes } = this.options;
    const page = await client.request(url, { signal, maxBytes: manifestMaxBytes });
    const reading = readHls(page.body.toString('utf8'), page.url);
    if (!reading.firstSegment) return null;
    const parts: Buffer[] = [];
    let budget = this.options.maxBytes;
    for (const part of [reading.firstSegment.init, reading.firstSegment.url]) {
      if (!part) continue;
      const res = await client.request(part, { signal, maxBytes: budget });
      budget -= res.body.length;
      parts.push(res.body);
    }
    const bytes = Buffer.concat(parts);
    const durationSeconds = reading.manifest.durationSeconds ?? null;
    try {
      const facts = await readContainer(bytes, { duration: false, signal });
      // As ffprobe gives it for the segment: its bits over its length (the playlist's).
      const segment = reading.firstSegment.durationSeconds;
      return this.counted('in_process', {
        ...facts,
        durationSeconds,
        bitrate: segment ? Math.round((parts.at(-1)!.length * 8) / segment) : null,
      });
    } catch (err) {
      if (!(err instanceof UnreadableContainerError) || looksLikeText(bytes)) throw this.counted('in_process', err, 'failed');
    }
    const dir = await mkdtemp(join(tmpdir(), 'mediagate-probe-'));
    try {
      const file = join(dir, 'first-segment');
      await writeFile(file, bytes);
      const facts = await probeLocalStreams(file, { signal, ffprobePath: this.options.ffprobePath });
      return this.counted('ffprobe', { ...facts, durationSeconds });
    } catch (err) {
      throw this.counted('ffprobe', err, 'failed');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Reports a read's outcome and hands back what it was given: facts read, or the failure to throw. */
  private counted<T>(reader: MediaReader, result: T, outcome: 'read' | 'failed' = 'read'): T {
    this.options.onRead?.(reader, outcome);
    return result;
  }
}

/** Whether the bytes a file starts with are text: nothing but printable characters and white space. */
function looksLikeText(head: Buffer): boolean {
  const sample = head.subarray(0, 512);
  if (!sample.length) return false;
  for (const byte of sample) if (byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d && byte !== 0x0c) return false;
  return true;
}

/** Fills what a probe learnt into a format: the file's own streams outrank what the page said of them. */
export function applyProbe(format: MediaFormat, facts: StreamFacts | null): void {
  if (!facts) return;
  format.hasAudio = format.audio ? false : facts.hasAudio;
  format.hasVideo = facts.hasVideo;
  if (!facts.hasVideo && facts.hasAudio && format.kind === 'video') {
    format.kind = 'audio';
    format.width = null;
    format.height = null;
  }
  if (facts.hasVideo) {
    format.width = facts.width ?? format.width;
    format.height = facts.height ?? format.height;
  }
  format.durationSeconds ??= facts.durationSeconds;
  format.codecs ??= facts.codecs;
  format.bitrate ??= facts.bitrate;
}
