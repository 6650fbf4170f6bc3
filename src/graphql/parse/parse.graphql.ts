import { Field, Float, ID, InputType, Int, ObjectType } from 'type-graphql';
import { Credits, JSONObject } from '../scalars.js';
import { InheritsScope } from '../scopes.js';

@ObjectType('MediaFormat', {
  simpleResolvers: true,
  description: 'A direct media URL and what is known of it; null means unknown, never a guess.',
})
export class MediaFormatType {
  @Field({
    description:
      'The direct media URL (a file, or an HLS (m3u8) or DASH (mpd) manifest), or with delivery "stream" the gateway’s stream URL ({PUBLIC_URL}/api/streams/{token}), valid until expiresAt',
  })
  url!: string;
  @Field({ description: 'video, audio or image' }) kind!: string;
  @Field(() => String, { nullable: true, description: 'Container or file type: mp4, webm, m3u8, mpd, mp3, jpg, …; null when unknown' })
  container!: string | null;
  @Field(() => Int, { nullable: true, description: 'Width in pixels; null when unknown or audio' }) width!: number | null;
  @Field(() => Int, { nullable: true, description: 'Height in pixels; null when unknown or audio' }) height!: number | null;
  @Field(() => Int, { nullable: true, description: 'Peak bits per second, when known' }) bitrate!: number | null;
  @Field(() => String, { nullable: true, description: 'Codecs, comma-separated (RFC 6381 strings or ffprobe names), when known' })
  codecs!: string | null;
  @Field(() => Float, { nullable: true, description: 'Length in seconds, when known' }) durationSeconds!: number | null;
  @Field(() => Boolean, { nullable: true, description: 'Whether this URL carries sound; null when nothing says (never a guess)' })
  hasAudio!: boolean | null;
  @Field({ description: 'Whether this URL carries pictures that move (false for audio and images)' }) hasVideo!: boolean;
  @Field(() => String, { nullable: true, description: 'ISO-8601; when the direct URL stops working, if the site says; null otherwise' })
  expiresAt!: string | null;
  @Field(() => JSONObject, { nullable: true, description: 'Request headers the URL needs (e.g. Referer), name → value; null when none' })
  headers!: Record<string, string> | null;
  @Field({
    description:
      'direct: url is the source itself; stream: url is the gateway’s signed stream (audio taken out of a video, a video without its sound, separate tracks joined, request headers sent for you, or stream: true)',
  })
  delivery!: string;
  @Field(() => MediaFormatType, {
    nullable: true,
    description: 'For a video variant without sound of its own (HLS/DASH): the audio track to play or mux with it',
  })
  @InheritsScope()
  audio?: MediaFormatType | null;
}

@ObjectType('CoverImage', { simpleResolvers: true, description: 'The picture a page shows for its media' })
export class CoverImageType {
  @Field({ description: 'The picture’s URL' }) url!: string;
  @Field(() => Int, { nullable: true, description: 'Width in pixels; null when unknown' }) width!: number | null;
  @Field(() => Int, { nullable: true, description: 'Height in pixels; null when unknown' }) height!: number | null;
}

@ObjectType('ParseItem', {
  simpleResolvers: true,
  description: 'One item of a multi-item post (gallery or playlist): its chosen format with its own title, picture and other formats.',
})
export class ParseItemType extends MediaFormatType {
  @Field(() => String, { nullable: true, description: 'The item’s own title; null when it has none' }) title!: string | null;
  @Field(() => CoverImageType, { nullable: true, description: 'The item’s own picture; null when it has none' })
  @InheritsScope()
  cover!: CoverImageType | null;
  @Field(() => [MediaFormatType], { description: 'The item’s other formats' })
  @InheritsScope()
  alternatives!: MediaFormatType[];
}

@ObjectType('MediaMetadata', {
  simpleResolvers: true,
  description: 'What the page says about its media; each field null when the page does not say',
})
export class MediaMetadataType {
  @Field(() => String, { nullable: true, description: 'The title' }) title!: string | null;
  @Field(() => String, { nullable: true, description: 'The author or channel' }) author!: string | null;
  @Field(() => Float, { nullable: true, description: 'Length in seconds' }) durationSeconds!: number | null;
  @Field(() => String, { nullable: true, description: 'When it was published, ISO-8601 as the page gives it' }) publishedAt!: string | null;
  @Field(() => String, { nullable: true, description: 'The page’s description of the media' }) description!: string | null;
  @Field(() => String, { nullable: true, description: 'The site’s name (e.g. from og:site_name)' }) site!: string | null;
}

@ObjectType('CreditCharge', {
  simpleResolvers: true,
  description: 'What a task charged and the available balance after it, in whole credits.',
})
export class CreditChargeType {
  @Field(() => Credits, {
    description:
      'Credits this task cost (captured from its hold); a replay with the same idempotency key shows the first charge and charges nothing more',
  })
  charged!: number;
  @Field(() => Credits, { description: 'Available credits right after the charge' }) balance!: number;
}

@ObjectType('ParseResult', {
  simpleResolvers: true,
  description: 'A resolved page: the chosen media, the other formats, the page’s metadata and what it cost',
})
export class ParseResultType {
  @Field(() => ID, { description: 'The job id (job(id) shows it again)' }) id!: string;
  @Field({ description: 'Always SUCCEEDED (a failure is an error instead)' }) status!: string;
  @Field({ description: 'The page URL, as checked' }) url!: string;
  @Field({ description: 'The mode applied: auto, audio or mute' }) mode!: string;
  @Field({ description: 'The quality applied: max, 1080, 720 or 480 (the default when none was asked)' }) quality!: string;
  @Field(() => String, { nullable: true, description: 'The audio file asked for (best, mp3, opus, m4a, wav), when the request named one' })
  audioFormat?: string | null;
  @Field(() => Boolean, { nullable: true, description: 'Whether every format was asked through the gateway, when the request said' })
  stream?: boolean | null;
  @Field(() => MediaFormatType, { description: 'The format chosen for mode and quality: the highest at or below the quality’s height' })
  @InheritsScope()
  media!: MediaFormatType;
  @Field(() => [MediaFormatType], { description: 'The other formats the page offers' })
  @InheritsScope()
  alternatives!: MediaFormatType[];
  @Field(() => [ParseItemType], { description: 'Multi-item posts: one entry per item (empty for a single media)' })
  @InheritsScope()
  items!: ParseItemType[];
  @Field(() => Int, { description: 'Items the post has; more than items when the list was capped (PARSE_MAX_ITEMS)' }) itemsTotal!: number;
  @Field(() => CoverImageType, { nullable: true, description: 'The page’s picture; null when it has none' })
  @InheritsScope()
  cover!: CoverImageType | null;
  @Field(() => MediaMetadataType, { description: 'What the page says about its media' })
  @InheritsScope()
  metadata!: MediaMetadataType;
  @Field({ description: 'The parse provider that answered: builtin, cobalt or ytdlp' }) provider!: string;
  @Field(() => CreditChargeType, { description: 'What the parse cost (default 1 credit)' })
  @InheritsScope()
  credits!: CreditChargeType;
}

@InputType({
  description:
    'mode: auto | audio | mute (default auto); quality: max | 1080 | 720 | 480 (default 1080 for members, 720 otherwise); audioFormat: best | mp3 | opus | m4a | wav (default best); stream (default false)',
})
export class ParseInput {
  @Field({
    description:
      'The public page (or direct media) URL, http(s), at most 2048 characters; private and loopback addresses are refused (URL_NOT_ALLOWED)',
  })
  url!: string;
  @Field(() => String, {
    nullable: true,
    description: 'auto (video with its sound where there is one), audio (sound only) or mute (video without sound); default auto',
  })
  mode?: string | null;
  @Field(() => String, {
    nullable: true,
    description: 'max, 1080, 720 or 480: the highest format at or below this height; max and 1080 need a membership (MEMBERSHIP_REQUIRED)',
  })
  quality?: string | null;
  @Field(() => String, {
    nullable: true,
    description:
      'best, mp3, opus, m4a or wav: the audio file the gateway makes when it streams audio (mode audio); best (default) copies the source’s codec into a container that fits it, the others convert',
  })
  audioFormat?: string | null;
  @Field(() => Boolean, {
    nullable: true,
    description: 'true: every format comes through the gateway (delivery "stream"), as for media that needs request headers; default false',
  })
  stream?: boolean | null;
}
