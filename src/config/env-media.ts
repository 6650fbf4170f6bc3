import { z } from 'zod';
import { parseAllowHosts } from '../addresses.js';
import { seconds } from './kinds.js';

/** What the gateway fetches and reads: allowed hosts, pages, manifests, media probes, temp disk, the tools it runs. */
export const mediaVariables = {
  FETCH_ALLOW_HOSTS: z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((p) => p.trim().toLowerCase())
        .filter(Boolean),
    )
    .pipe(
      z.array(
        z
          .string()
          .regex(/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+):\d{1,5}$/, 'entries must be host:port')
          .refine((e) => Number(e.slice(e.lastIndexOf(':') + 1)) <= 65535, 'ports go up to 65535')
          .refine((e) => {
            try {
              parseAllowHosts([e]);
              return true;
            } catch {
              return false;
            }
          }, 'entries must be host:port with a valid host'),
      ),
    )
    .default([])
    .describe(
      "`host:port,…` that callers' URLs may reach although they are private or loopback (self-hosted media, tests). Provider base URLs are the operator's and need no entry.",
    ),
  PAGE_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(5 * 1024 * 1024)
    .describe('Largest page (HTML) a parse reads.'),
  MANIFEST_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024)
    .describe('Largest HLS playlist or DASH manifest a parse reads.'),
  PARSE_MAX_ITEMS: z.coerce
    .number()
    .int()
    .min(1)
    .max(500)
    .default(50)
    .describe('Gallery or playlist items listed at most; the rest are counted in `itemsTotal`.'),
  PROBE_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(16 * 1024 * 1024)
    .describe('Bytes reading one media URL during a parse may fetch (the in-process reader and ffprobe after it together).'),
  PROBE_TIMEOUT_SECONDS: seconds(10).describe('Seconds reading one media URL during a parse may take (both readers together).'),
  PROBE_MAX_CANDIDATES: z.coerce
    .number()
    .int()
    .min(0)
    .max(20)
    .default(3)
    .describe(
      'Formats read at most per parse while looking for a silent one (`mode: mute`), and while checking media a page names only in links, scripts or AMP tags (`0`: such media is never used).',
    ),
  PROBE_MEMORY_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .default(32 * 1024 * 1024)
    .describe(
      'Bytes of media all probes of one gateway process may hold in memory at once. A probe that cannot have the bytes it needs at once is given up: the format’s size, length, codecs and sound stay null, the parse goes on.',
    ),
  PROBE_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .default(64)
    .describe(
      'Media probes one gateway process runs at once. A probe past it is skipped at once, never waited for: the format’s unknown fields stay null.',
    ),
  PROBE_MAX_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .min(1)
    .default(8)
    .describe(
      'Media probes one account may have running at once in one gateway process (a parse in mode `mute` runs up to `PROBE_MAX_CANDIDATES` of them). Past it the account’s probes are skipped: unknown fields stay null.',
    ),
  PROBE_FFPROBE_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(0)
    .default(2)
    .describe(
      'ffprobe processes media probes may run at once in one gateway process (`0`: never), for what the in-process reader cannot read (each may take tens of MiB of its own). A probe that finds none free is given up at once.',
    ),
  PROBE_MAX_PART_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .default(4 * 1024 * 1024)
    .describe(
      'Largest single part of a media file the in-process reader loads into memory: an MP4’s moov box, an HLS playlist’s first segment. A larger part is read by ffprobe as a stream through the gateway’s relay, within what is left of `PROBE_MAX_BYTES`, or given up.',
    ),
  STREAM_TTL_SECONDS: seconds(1800).describe(
    'How long a stream URL of a parse answer (`delivery: "stream"`) stays valid (its `expiresAt`); past it, 410 `STREAM_EXPIRED`.',
  ),
  STREAM_MAX_SECONDS: seconds(4 * 3600).describe(
    'How long one stream may run (a request to `/api/streams/{token}`); past it the connection is cut.',
  ),
  STREAM_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(4 * 1024 * 1024 * 1024)
    .describe(
      'Bytes one stream may send to its caller, and bytes it may read from the source(s); past either, the connection is cut (never ended as if whole).',
    ),
  STREAM_MAX_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .min(1)
    .default(4)
    .describe('Streams one account may have open at once in one gateway process; past it, 429 `RATE_LIMITED` with `Retry-After`.'),
  STREAM_FFMPEG_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(0)
    .default(4)
    .describe(
      'ffmpeg processes streams may run at once in one gateway process (audio taken out, sound left out, tracks joined, manifests remuxed; `0`: none, only pass-through streams). Past it, 503 `PROVIDER_UNAVAILABLE` with `Retry-After`.',
    ),
  WEBHOOK_TIMEOUT_SECONDS: seconds(10).describe('Time one webhook delivery may take.'),
  WEBHOOK_RETRY_DELAY_SECONDS: seconds(30).describe(
    'The first wait before a failed webhook delivery is tried again; it doubles, up to 3 h, for more than a day.',
  ),
  MEDIA_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024 * 1024)
    .describe('Largest media file downloaded for a transcription.'),
  TEMP_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(2 * 1024 * 1024 * 1024)
    .describe(
      'Bytes all transcriptions of one process may have in the temporary directory at once: each download reserves its `Content-Length`, or `MEDIA_MAX_BYTES` when it names none, before its first byte, and its prepared audio reserves 40 kB per second as it is written. A synchronous transcription past it: `503 PROVIDER_UNAVAILABLE` with `Retry-After`, nothing charged; a queued one waits its turn.',
    ),
  TEMP_MAX_DOWNLOADS: z.coerce
    .number()
    .int()
    .min(1)
    .default(4)
    .describe(
      'Media downloads for transcriptions one process runs at once. Past it: `503 PROVIDER_UNAVAILABLE` with `Retry-After` for a synchronous transcription, a queued one waits its turn.',
    ),
  TRANSCRIBE_MAX_PER_ACCOUNT: z.coerce
    .number()
    .int()
    .min(1)
    .default(2)
    .describe(
      'Synchronous transcriptions one account may have running at once in one process. Past it: `429 RATE_LIMITED` with `Retry-After`, nothing held; queued transcriptions (`startTranscription`, `Prefer: respond-async`) are not counted.',
    ),
  FFMPEG_PATH: z.string().min(1).default('ffmpeg').describe('The ffmpeg program.'),
  FFPROBE_PATH: z.string().min(1).default('ffprobe').describe('The ffprobe program.'),
  POCKETSPHINX_PATH: z
    .string()
    .min(1)
    .default('pocketsphinx_continuous')
    .describe('The PocketSphinx recogniser (the `local` transcription provider).'),
  YTDLP_PATH: z
    .string()
    .min(1)
    .default('yt-dlp')
    .describe(
      'The yt-dlp program (the `ytdlp` parse provider); it fetches through a guarded local proxy, so it meets the same address rules.',
    ),
};
