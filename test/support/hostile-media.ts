import type { IncomingMessage, ServerResponse } from 'node:http';

/** What one media URL's server saw: every request's Range header, the bytes it sent, and the answers it holds open. */
export interface Served {
  ranges: (string | undefined)[];
  bytes: number;
  held: number;
}

export const served = (): Served => ({ ranges: [], bytes: 0, held: 0 });

/** An MP4 box: its size, its type, its payload. */
export const box = (type: string, payload: Buffer): Buffer => {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + payload.length);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, payload]);
};

const FTYP = box('ftyp', Buffer.from('isom\0\0\x02\0isomiso2avc1mp41', 'latin1'));

/** An MP4 whose moov box (at the end, after the ftyp) is `moovBytes` long: an mvhd, then zeros. */
export function bigMoovMp4(moovBytes: number): Buffer {
  const mvhd = box('mvhd', Buffer.alloc(100));
  return Buffer.concat([FTYP, box('moov', Buffer.concat([mvhd, Buffer.alloc(moovBytes - 8 - mvhd.length)]))]);
}

/**
 * A real MP4 whose moov box (last in the file, as ffmpeg writes it) is padded with a free box to
 * `moovBytes`: the media data does not move, so every offset stays right and ffprobe reads it.
 */
export function padMoov(mp4: Buffer, moovBytes: number): Buffer {
  let at = 0;
  while (at < mp4.length) {
    const size = mp4.readUInt32BE(at);
    if (mp4.toString('latin1', at + 4, at + 8) === 'moov') {
      if (at + size !== mp4.length) throw new Error('padMoov wants the moov box last');
      const free = box('free', Buffer.alloc(moovBytes - size - 8));
      const head = Buffer.from(mp4.subarray(at, at + 8));
      head.writeUInt32BE(moovBytes);
      return Buffer.concat([mp4.subarray(0, at), head, mp4.subarray(at + 8), free]);
    }
    at += size;
  }
  throw new Error('no moov box');
}

/**
 * Serves `body` as a CDN would (206 for `bytes=a-b` or `bytes=a-`), except that an answer longer
 * than `wholeUpTo` bytes stops one byte short and is held open: the client has all but the last
 * byte of it in hand, for as long as it waits. `hold: 'all'` holds every answer before any byte.
 */
export function holding(
  body: Buffer,
  seen: Served,
  options: { wholeUpTo?: number; hold?: 'large' | 'all'; type?: string } = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const { wholeUpTo = 64 * 1024, hold = 'large', type = 'video/mp4' } = options;
  return (req, res) => {
    seen.ranges.push(req.headers.range);
    if (hold === 'all') {
      seen.held += 1;
      return;
    }
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const start = m ? Number(m[1]) : 0;
    const end = Math.min(m?.[2] ? Number(m[2]) : body.length - 1, body.length - 1);
    const part = body.subarray(start, end + 1);
    res.writeHead(m ? 206 : 200, {
      'content-type': type,
      'content-length': part.length,
      ...(m && { 'content-range': `bytes ${start}-${end}/${body.length}` }),
    });
    if (part.length <= wholeUpTo) {
      seen.bytes += part.length;
      return void res.end(part);
    }
    seen.bytes += part.length - 1;
    seen.held += 1;
    res.write(part.subarray(0, part.length - 1));
  };
}

/** The probe budget's figures and the media read counters, as /metrics shows them. */
export interface ProbeFigures {
  memoryBytes: number;
  peakBytes: number;
  limitBytes: number;
  running: number;
  ffprobes: number;
  skipped: Record<string, number>;
  reads: Record<string, number>;
}

export function probeFigures(metrics: string): ProbeFigures {
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1] ?? Number.NaN);
  const skipped: Record<string, number> = {};
  for (const m of metrics.matchAll(/^mediagate_probes_skipped_total\{why="(\w+)"\} (\d+)/gm)) skipped[m[1]] = Number(m[2]);
  const reads: Record<string, number> = {};
  for (const m of metrics.matchAll(/^mediagate_media_reads_total\{reader="(\w+)",outcome="(\w+)"\} (\d+)/gm))
    reads[`${m[1]} ${m[2]}`] = Number(m[3]);
  return {
    memoryBytes: value('mediagate_probe_memory_bytes'),
    peakBytes: value('mediagate_probe_memory_peak_bytes'),
    limitBytes: value('mediagate_probe_memory_limit_bytes'),
    running: value('mediagate_probes_running\\{kind="all"\\}'),
    ffprobes: value('mediagate_probes_running\\{kind="ffprobe"\\}'),
    skipped,
    reads,
  };
}

/** What changed between two readings of a set of counters. */
export const counterDelta = (before: Record<string, number>, after: Record<string, number>): Record<string, number> =>
  Object.fromEntries(
    Object.entries(after)
      .filter(([k, v]) => v !== (before[k] ?? 0))
      .map(([k, v]) => [k, v - (before[k] ?? 0)]),
  );

/** A page naming each media URL in a `<video>` element of its own, with a plain type and nothing of size, length or sound. */
export const videoPage = (urls: string[], type = 'video/mp4'): string =>
  `<html><head><title>Clips</title></head><body>${urls.map((u) => `<video controls><source src="${u}" type="${type}"></video>`).join('')}</body></html>`;
