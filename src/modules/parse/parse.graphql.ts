import { Field, Float, ID, InputType, Int, ObjectType } from 'type-graphql';
import { Credits, JSONObject } from '../../graphql/scalars.js';

@ObjectType('MediaFormat', { description: 'A direct media URL and what is known of it.' })
export class MediaFormatType {
  @Field() url!: string;
  @Field({ description: 'video, audio or image' }) kind!: string;
  @Field(() => String, { nullable: true }) container!: string | null;
  @Field(() => Int, { nullable: true }) width!: number | null;
  @Field(() => Int, { nullable: true }) height!: number | null;
  @Field(() => Int, { nullable: true, description: 'Peak bits per second, when known' }) bitrate!: number | null;
  @Field(() => String, { nullable: true, description: 'Codecs, comma-separated (RFC 6381 strings or ffprobe names), when known' })
  codecs!: string | null;
  @Field(() => Float, { nullable: true, description: 'Length in seconds, when known' }) durationSeconds!: number | null;
  @Field(() => Boolean, { nullable: true, description: 'Whether this URL carries sound; null when nothing says (never a guess)' })
  hasAudio!: boolean | null;
  @Field() hasVideo!: boolean;
  @Field(() => String, { nullable: true, description: 'ISO-8601; when the direct URL stops working' }) expiresAt!: string | null;
  @Field(() => JSONObject, { nullable: true, description: 'Request headers the URL needs' }) headers!: Record<string, string> | null;
  @Field(() => MediaFormatType, { nullable: true, description: 'The separate audio track of a video-only variant' })
  audio?: MediaFormatType | null;
}

@ObjectType('CoverImage')
export class CoverImageType {
  @Field() url!: string;
  @Field(() => Int, { nullable: true }) width!: number | null;
  @Field(() => Int, { nullable: true }) height!: number | null;
}

@ObjectType('ParseItem', { description: 'One item of a multi-item post (gallery or playlist): its chosen format with its own title, picture and other formats.' })
export class ParseItemType extends MediaFormatType {
  @Field(() => String, { nullable: true }) title!: string | null;
  @Field(() => CoverImageType, { nullable: true }) cover!: CoverImageType | null;
  @Field(() => [MediaFormatType]) alternatives!: MediaFormatType[];
}

@ObjectType('MediaMetadata')
export class MediaMetadataType {
  @Field(() => String, { nullable: true }) title!: string | null;
  @Field(() => String, { nullable: true }) author!: string | null;
  @Field(() => Float, { nullable: true }) durationSeconds!: number | null;
  @Field(() => String, { nullable: true }) publishedAt!: string | null;
  @Field(() => String, { nullable: true }) description!: string | null;
  @Field(() => String, { nullable: true }) site!: string | null;
}

@ObjectType('CreditCharge', { description: 'What a task charged and the available balance after it.' })
export class CreditChargeType {
  @Field(() => Credits) charged!: number;
  @Field(() => Credits) balance!: number;
}

@ObjectType('ParseResult')
export class ParseResultType {
  @Field(() => ID, { description: 'The job id' }) id!: string;
  @Field() status!: string;
  @Field() url!: string;
  @Field() mode!: string;
  @Field() quality!: string;
  @Field(() => MediaFormatType) media!: MediaFormatType;
  @Field(() => [MediaFormatType]) alternatives!: MediaFormatType[];
  @Field(() => [ParseItemType], { description: 'Multi-item posts: one entry per item (empty for a single media)' }) items!: ParseItemType[];
  @Field(() => Int, { description: 'Items the post has; more than items when the list was capped (PARSE_MAX_ITEMS)' }) itemsTotal!: number;
  @Field(() => CoverImageType, { nullable: true }) cover!: CoverImageType | null;
  @Field(() => MediaMetadataType) metadata!: MediaMetadataType;
  @Field() provider!: string;
  @Field(() => CreditChargeType) credits!: CreditChargeType;
}

@InputType({ description: 'mode: auto | audio | mute (default auto); quality: max | 1080 | 720 | 480 (default 1080 for members, 720 otherwise)' })
export class ParseInput {
  @Field() url!: string;
  @Field(() => String, { nullable: true }) mode?: string | null;
  @Field(() => String, { nullable: true }) quality?: string | null;
}
