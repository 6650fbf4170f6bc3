import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readContainer, UnreadableContainerError } from '../../media/container.reader.js';
import { probeLocalStreams, probeRelayedStreams, type StreamFacts } from '../../media/ffmpeg.js';
import { FetchError } from '../../net/fetch-error.js';
import type { GuardedHttpClient } from '../../net/guarded-client.js';
import { withProbeRelay } from '../../net/probe-relay.js';
import { MemoryBudgetError, PartTooLargeError, RangeReader, RangesUnsupportedError } from '../../net/range-reader.js';
import { audioCodecsOf, videoCodecsOf } from './codecs.js';
import { readHls } from './manifest.reader.js';
import type { MediaFormat } from './parse.types.js';
import type { ProbeBudget, ProbeLease, ProbeRefusal } from './probe.budget.js';
import { ReadCache } from './read.cache.js';
import { asCallerOrPlayer, mediaRequestHeaders, needReferer } from './request-headers.js';

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
  /** Largest part of a file loaded into memory (a moov box, a playlist's first segment); a larger one is streamed to ffprobe or given up. */
  maxPartBytes: number;
  /** What all probes of the process may hold and run at once. */
  budget: ProbeBudget;
  /** How long a URL's answer is reused (default 60 s), and how many are kept (default 10,000). */
  cacheTtlMs?: number;
  cacheMaxEntries?: number;
  /** Told of every read made: which reader, and whether it learnt the streams. */
  onRead?: (reader: MediaReader, outcome: 'read' | 'failed') => void;
  /** Told of every answer reused instead of read. */
  onReuse?: (how: 'cache' | 'in_flight') => void;
}

/** Largest request a scan of a file grows to: a few of them read a segment-sized file end to end. */
const MAX_RUN_BYTES = 1024 * 1024;

/** What a read found; `referer` when the source answered only with its page as Referer (see probe). */
export type ProbedFacts = StreamFacts & { referer?: string };

/**
 * One read in progress: its deadline's signal, its lease of the budget, the time it has left, the
 * headers every request of it carries, and the bytes it has fetched so far.
 */
interface Reading {
  signal: AbortSignal;
  lease: ProbeLease;
  left: () => number;
  headers: Record<string, string>;
  fetched: number;
}

/** A probe given up for want of budget: its answer is not the file's, so it is not kept. */
class ProbeSkipped extends Error {
  constructor(readonly why: ProbeRefusal) {
    super(`The probe was skipped: no ${why} left in its budget.`);
    this.name = 'ProbeSkipped';
  }
}

/**
 * Finds out what a format really holds (size, length, codecs, sound), reading only through the
 * guarded client: in process, by reading the container's header with Range requests (an MP4's moov
 * box, first or last, a WebM's tracks, an MP3's first frames: a few kilobytes in one or two
 * requests); ffprobe only for what that reader cannot read, through the loopback relay, with what
 * is left of the bytes and time. An HLS playlist is read by its first segment. Each URL is read
 * once at a time and its answer kept briefly. A read that fails or runs out answers null, never an
 * error. Every read runs on a lease of the process's budget (a slot, per account too, and the bytes
 * it holds, counted while held); a read that cannot have its share at once is skipped (null, and
 * not kept), never waited for. No part larger than `maxPartBytes` is loaded into memory, and the
 * in-process reader's bytes are dropped before ffprobe starts.
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

  /**
   * What the format holds, or null when unknown; `account` (a plain id) is whose probes count against
   * its cap. `pageUrl` is the page the format was found on (null for a URL given alone). The URL is
   * read first as a caller would fetch it (with only the headers its provider reported); a source
   * that refuses that (401 or 403: a CDN refusing hotlinks) is read again as the page's player
   * would fetch it, with the page as Referer, and the facts then say so (`referer`), so that the
   * answer hands the caller a URL that plays (applyProbe, then a stream that sends it).
   */
  async probe(
    format: MediaFormat,
    signal: AbortSignal,
    account: string | null = null,
    pageUrl: string | null = null,
  ): Promise<ProbedFacts | null> {
    if (format.container === 'mpd') return null; // a segmented DASH manifest is described by itself
    const playlist = format.container === 'm3u8';
    // Another site's Referer may get another answer (a CDN refusing hotlinks checks the site, not the
    // page): the headers are part of the key, the Referer by its origin, so the pages of one site share a read.
    const { referer, ...others } = mediaRequestHeaders(format, pageUrl);
    const site = referer && URL.canParse(referer) ? new URL(referer).origin : (referer ?? '-');
    const key = `${playlist ? 'm3u8' : 'file'} ${format.url} ${site} ${JSON.stringify(others)}`;
    const read = (deadline: AbortSignal) => this.read(format, playlist, deadline, account, pageUrl);
    try {
      return await this.reads.get(key, read, signal);
    } catch (err) {
      if (err instanceof ProbeSkipped) return null;
      throw err;
    }
  }

  private async read(
    format: MediaFormat,
    playlist: boolean,
    signal: AbortSignal,
    account: string | null,
    pageUrl: string | null,
  ): Promise<ProbedFacts | null> {
    const lease = this.options.budget.start(account);
    if (typeof lease === 'string') throw new ProbeSkipped(lease);
    const started = Date.now();
    const left = () => Math.max(1, this.options.timeoutMs - (Date.now() - started));
    const readings: Reading[] = [];
    const readAs = (headers: Record<string, string>) => {
      const r: Reading = { signal, lease, headers, left, fetched: 0 };
      readings.push(r);
      return playlist ? this.readPlaylist(format.url, r) : this.readFile(format.url, r);
    };
    try {
      const { value: facts, referer } = await asCallerOrPlayer(format, pageUrl, readAs, () => readings[0].fetched === 0);
      return facts && referer ? { ...facts, referer } : facts;
    } catch (err) {
      if (err instanceof ProbeSkipped) throw err;
      return null;
    } finally {
      lease.end();
    }
  }

  /** In process over ranges; ffprobe through the relay when the container (or the server, or a part's size) is beyond that reader. */
  private async readFile(url: string, r: Reading): Promise<StreamFacts> {
    const { signal, lease, left, headers } = r;
    const { client, maxBytes, maxPartBytes } = this.options;
    const ranges = new RangeReader(client, url, {
      maxBytes,
      headers,
      signal,
      timeoutMs: left(),
      memory: lease,
      maxPartBytes,
      maxHeldBytes: maxPartBytes + 2 * Math.min(MAX_RUN_BYTES, maxPartBytes),
      maxRunBytes: Math.min(MAX_RUN_BYTES, maxPartBytes),
    });
    try {
      await ranges.open();
      return this.counted('in_process', await readContainer(ranges, { signal }));
    } catch (err) {
      if (err instanceof MemoryBudgetError) throw new ProbeSkipped('bytes');
      if (!(err instanceof UnreadableContainerError || err instanceof RangesUnsupportedError || err instanceof PartTooLargeError))
        throw this.counted('in_process', err, 'failed');
      // Every container ffprobe may open is binary: text (an error page served as video) is no media.
      if (err instanceof UnreadableContainerError && looksLikeText(await ranges.head())) throw this.counted('in_process', err, 'failed');
    } finally {
      // Nothing the in-process reader fetched stays in memory while ffprobe reads.
      ranges.release();
      r.fetched += ranges.fetched;
    }
    return this.ffprobe(url, maxBytes - ranges.fetched, r);
  }

  private async ffprobe(url: string, maxBytes: number, r: Reading): Promise<StreamFacts> {
    const { signal, lease, headers } = r;
    if (!lease.startFfprobe()) throw new ProbeSkipped('ffprobe');
    try {
      const onBytes = (n: number) => void (r.fetched += n);
      const facts = await withProbeRelay(this.options.client, url, { maxBytes, timeoutMs: r.left(), signal, headers, onBytes }, (relay) =>
        probeRelayedStreams(relay, { signal, ffprobePath: this.options.ffprobePath }),
      );
      return this.counted('ffprobe', facts);
    } catch (err) {
      throw this.counted('ffprobe', err, 'failed');
    } finally {
      lease.endFfprobe();
    }
  }

  /**
   * A media playlist's first segment (after its initialisation section), fetched whole (within the
   * part cap, counted while held) and read as a file; its length from the playlist. A segment over
   * the part cap is streamed to ffprobe instead.
   */
  private async readPlaylist(url: string, r: Reading): Promise<StreamFacts | null> {
    const { signal, lease } = r;
    const { maxBytes, maxPartBytes } = this.options;
    const page = await this.fetchWhole(url, this.options.manifestMaxBytes, r);
    const reading = readHls(page.toString('utf8'), url);
    lease.free(page.length);
    if (!reading.firstSegment) return null;
    const durationSeconds = reading.manifest.durationSeconds ?? null;
    const { init, url: segmentUrl, durationSeconds: segmentSeconds } = reading.firstSegment;
    const parts: Buffer[] = [];
    let room = Math.min(maxBytes - page.length, maxPartBytes);
    try {
      for (const part of [init, segmentUrl]) {
        if (!part) continue;
        const bytes = await this.fetchWhole(part, room, r);
        room -= bytes.length;
        parts.push(bytes);
      }
    } catch (err) {
      const tooLarge = err instanceof FetchError && err.kind === 'too_large';
      // A segment too large to hold is read as a stream, when it stands alone (an MPEG-TS segment).
      if (!tooLarge || init) throw err;
      lease.free(parts.reduce((n, p) => n + p.length, 0));
      parts.length = 0;
      const facts = await this.ffprobe(segmentUrl, maxBytes - page.length, r);
      return { ...facts, durationSeconds };
    }
    const held = parts.reduce((n, p) => n + p.length, 0);
    const segmentBytes = held - (init ? parts[0].length : 0);
    let bytes: Buffer | null = parts.length === 1 ? parts[0] : Buffer.concat(parts);
    parts.length = 0;
    try {
      const facts = await readContainer(bytes, { duration: false, signal });
      // As ffprobe gives it for the segment: its bits over its length (the playlist's).
      return this.counted('in_process', {
        ...facts,
        durationSeconds,
        bitrate: segmentSeconds ? Math.round((segmentBytes * 8) / segmentSeconds) : null,
      });
    } catch (err) {
      if (!(err instanceof UnreadableContainerError) || looksLikeText(bytes)) throw this.counted('in_process', err, 'failed');
    }
    if (!lease.startFfprobe()) throw new ProbeSkipped('ffprobe');
    const dir = await mkdtemp(join(tmpdir(), 'mediagate-probe-'));
    try {
      const file = join(dir, 'first-segment');
      await writeFile(file, bytes);
      // On disk now: the memory is given back before ffprobe runs.
      bytes = null;
      lease.free(held);
      const facts = await probeLocalStreams(file, { signal, ffprobePath: this.options.ffprobePath });
      return this.counted('ffprobe', { ...facts, durationSeconds });
    } catch (err) {
      throw this.counted('ffprobe', err, 'failed');
    } finally {
      lease.endFfprobe();
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** A whole answer of at most `maxBytes`, each chunk counted against the lease as it comes (the caller frees the total). */
  private async fetchWhole(url: string, maxBytes: number, r: Reading): Promise<Buffer> {
    const { signal, lease } = r;
    const res = await this.options.client.open(url, { signal, timeoutMs: r.left(), headers: r.headers });
    const chunks: Buffer[] = [];
    let total = 0;
    try {
      const length = Number(res.headers['content-length']);
      if (Number.isFinite(length) && length > maxBytes)
        throw new FetchError('too_large', `The answer is ${length} bytes; the limit is ${maxBytes}.`);
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        if (total + chunk.length > maxBytes) throw new FetchError('too_large', `The answer is larger than ${maxBytes} bytes.`);
        if (!lease.reserve(chunk.length)) throw new ProbeSkipped('bytes');
        total += chunk.length;
        r.fetched += chunk.length;
        chunks.push(chunk);
      }
    } catch (err) {
      lease.free(total);
      throw err;
    } finally {
      res.body.destroy();
    }
    if (chunks.length === 1) return chunks[0];
    // Joined into one: the copy is counted before it is made, the chunks given back once it is.
    if (!lease.reserve(total)) {
      lease.free(total);
      throw new ProbeSkipped('bytes');
    }
    const whole = Buffer.concat(chunks, total);
    lease.free(total);
    return whole;
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
export function applyProbe(format: MediaFormat, facts: ProbedFacts | null): void {
  if (!facts) return;
  // The caller could not fetch it: the headers it needs make it a stream the gateway sends them for.
  if (facts.referer) needReferer([format], facts.referer);
  // A format the gateway's stream makes from this URL keeps what it will be: only its length and codecs are learned.
  if (format.derived) {
    format.durationSeconds ??= facts.durationSeconds;
    format.codecs ??= (format.derived === 'audio' ? audioCodecsOf(facts.codecs) : videoCodecsOf(facts.codecs)) ?? null;
    if (format.derived === 'mute' && facts.hasVideo) {
      format.width = facts.width ?? format.width;
      format.height = facts.height ?? format.height;
    }
    return;
  }
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
