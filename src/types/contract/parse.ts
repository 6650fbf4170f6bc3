import { z } from 'zod';
import { component, creditsSchema } from './common.js';

export const PARSE_MODES = ['auto', 'audio', 'mute'] as const;
export const PARSE_QUALITIES = ['max', '1080', '720', '480'] as const;
export const MEDIA_KINDS = ['video', 'audio', 'image'] as const;
export const DELIVERIES = ['direct', 'stream'] as const;
/** The parse request's `audioFormat`: `best` copies the source's codec into a container that fits it. */
export const AUDIO_FORMATS = ['best', 'mp3', 'opus', 'm4a', 'wav'] as const;

const int = z.int();
const described = <T extends z.ZodType>(schema: T, description: string) => schema.meta({ description });

/** A format's own fields: a track, as an audio rendition beside a video is given. */
const trackSchema = z.object({
  url: described(
    z.string(),
    'the direct media URL (a file, or an HLS/DASH manifest), or with delivery "stream" the gateway’s stream URL ({PUBLIC_URL}/api/streams/{token})',
  ),
  kind: z.enum(MEDIA_KINDS),
  container: described(z.string().nullable(), 'container or file type: mp4, webm, m3u8, mpd, mp3, jpg, ...'),
  width: described(int.nullable(), 'pixels'),
  height: described(int.nullable(), 'pixels'),
  bitrate: described(int.nullable(), 'peak bits per second, when known'),
  codecs: described(z.string().nullable(), 'RFC 6381 codec strings (or ffprobe names), comma-separated, when known'),
  durationSeconds: described(z.number().nullable(), 'length in seconds, when known'),
  hasAudio: described(z.boolean().nullable(), 'whether this URL carries sound; null when nothing says'),
  hasVideo: z.boolean(),
  expiresAt: described(z.string().nullable(), 'when the direct URL stops working, if the site says (ISO-8601)'),
  headers: described(z.record(z.string(), z.string()).nullable(), 'request headers the URL needs (e.g. Referer)'),
  delivery: described(
    z.enum(DELIVERIES),
    'direct: url is the source itself; stream: url is the gateway’s signed stream (audio taken out, sound left out, separate tracks joined, headers sent for you, or stream: true), valid until expiresAt',
  ),
});

export const mediaFormatSchema = component(
  'MediaFormat',
  trackSchema.extend({
    audio: described(
      trackSchema.nullable().optional(),
      'for a video variant without sound of its own (HLS/DASH): the audio track to play or mux with it',
    ),
  }),
  'A direct media URL and what is known of it; null means unknown, never a guess.',
);

export const coverSchema = component(
  'Cover',
  z.object({ url: z.string(), width: int.nullable(), height: int.nullable() }),
  'The picture the page shows for the media',
);

export const metadataSchema = z.object({
  title: z.string().nullable(),
  author: z.string().nullable(),
  durationSeconds: z.number().nullable(),
  publishedAt: described(z.string().nullable(), 'ISO-8601, as the page gives it'),
  description: z.string().nullable(),
  site: described(z.string().nullable(), 'the site name, e.g. from og:site_name'),
});

export const parseItemSchema = component(
  'ParseItem',
  mediaFormatSchema.extend({
    title: z.string().nullable(),
    cover: coverSchema.nullable(),
    alternatives: z.array(mediaFormatSchema),
  }),
  'One item of a multi-item post (gallery, playlist): its chosen format, its own title and picture, its other formats',
);

/** What a parse provider answers; the response adds the job's id, the request and the credits. */
export const parseResultSchema = z.object({
  media: mediaFormatSchema,
  alternatives: described(z.array(mediaFormatSchema), 'the other formats, same shape as media'),
  items: described(z.array(parseItemSchema), 'multi-item posts: one entry per item, in page order (empty for a single media)'),
  itemsTotal: described(int, 'items the post has (0 for a single media); more than items when capped (PARSE_MAX_ITEMS)'),
  cover: coverSchema.nullable(),
  metadata: metadataSchema,
});

export const parseResponseSchema = component(
  'ParseResponse',
  z.object({
    id: described(z.uuid(), 'the job id (GET /api/jobs/{id})'),
    status: z.literal('SUCCEEDED'),
    url: described(z.string(), 'the page URL, normalised'),
    mode: z.enum(PARSE_MODES),
    quality: described(z.enum(PARSE_QUALITIES), 'the quality applied (the default when none was asked)'),
    audioFormat: described(z.enum(AUDIO_FORMATS).optional(), 'the audio file asked for, when the request named one'),
    stream: described(z.boolean().optional(), 'whether every format was asked through the gateway, when the request said'),
    ...parseResultSchema.shape,
    provider: described(z.string(), 'the parse provider that answered: builtin, cobalt or ytdlp'),
    credits: creditsSchema,
  }),
  'The success body of a parse, on both doors',
);

export type MediaFormatBody = z.infer<typeof mediaFormatSchema>;
export type ParseResultBody = z.infer<typeof parseResultSchema>;
export type ParseResponseBody = z.infer<typeof parseResponseSchema>;
