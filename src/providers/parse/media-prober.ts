import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWriteStream } from 'node:fs';
import { probeLocalStreams, probeRelayedStreams, type StreamFacts } from '../../media/ffmpeg.js';
import type { GuardedHttpClient } from '../../net/guarded-client.js';
import { withProbeRelay } from '../../net/probe-relay.js';
import { readHls } from './manifest.reader.js';
import type { MediaFormat } from './parse.types.js';

export interface ProberOptions {
  client: GuardedHttpClient;
  ffprobePath: string;
  /** Bytes one probe may read in all. */
  maxBytes: number;
  /** Time one probe may take. */
  timeoutMs: number;
  /** Largest playlist read to find a first segment. */
  manifestMaxBytes: number;
}

/**
 * Finds out what a format really holds (size, length, codecs, sound) with ffprobe, reading only
 * through the guarded client: a file through the loopback relay (ffprobe seeks with ranges, so a
 * moov box at the end costs a few requests, not the file), an HLS playlist by its first segment.
 * Bounded in bytes and time; a probe that fails or runs out answers null, never an error.
 */
export class MediaProber {
  constructor(private readonly options: ProberOptions) {}

  async probe(format: MediaFormat, signal: AbortSignal): Promise<StreamFacts | null> {
    if (format.container === 'mpd') return null; // a segmented DASH manifest is described by itself
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(this.options.timeoutMs)]);
    try {
      if (format.container === 'm3u8') return await this.probePlaylist(format.url, deadline);
      return await withProbeRelay(this.options.client, format.url, { maxBytes: this.options.maxBytes, timeoutMs: this.options.timeoutMs, signal: deadline }, (relay) =>
        probeRelayedStreams(relay, { signal: deadline, ffprobePath: this.options.ffprobePath }),
      );
    } catch {
      if (signal.aborted) throw signal.reason;
      return null;
    }
  }

  /** A media playlist's first segment (after its initialisation section), fetched whole and probed as a file; its length from the playlist. */
  private async probePlaylist(url: string, signal: AbortSignal): Promise<StreamFacts | null> {
    const { client, manifestMaxBytes } = this.options;
    const page = await client.request(url, { signal, maxBytes: manifestMaxBytes });
    const reading = readHls(page.body.toString('utf8'), page.url);
    if (!reading.firstSegment) return null;
    const dir = await mkdtemp(join(tmpdir(), 'mediagate-probe-'));
    try {
      const file = join(dir, 'first-segment');
      const out = createWriteStream(file);
      let budget = this.options.maxBytes;
      for (const part of [reading.firstSegment.init, reading.firstSegment.url]) {
        if (!part) continue;
        const res = await client.request(part, { signal, maxBytes: budget });
        budget -= res.body.length;
        out.write(res.body);
      }
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
      const facts = await probeLocalStreams(file, { signal, ffprobePath: this.options.ffprobePath });
      return { ...facts, durationSeconds: reading.manifest.durationSeconds ?? null };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
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
