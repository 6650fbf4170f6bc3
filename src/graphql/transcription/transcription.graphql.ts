import { Field, Float, ID, InputType, Int, ObjectType } from 'type-graphql';
import { InheritsScope } from '../scopes.js';
import { CreditChargeType } from '../parse/parse.graphql.js';

@ObjectType('TranscriptWord', { simpleResolvers: true, description: 'One word with its own timing' })
export class TranscriptWordType {
  @Field(() => Float, { description: 'Seconds from the start of the media' }) start!: number;
  @Field(() => Float, { description: 'Seconds from the start of the media' }) end!: number;
  @Field({ description: 'The word as written, with the punctuation the provider attaches to it' }) text!: string;
  @Field(() => String, { nullable: true, description: 'Speaker label; null unless the provider tells speakers apart' }) speaker?:
    | string
    | null;
}

@ObjectType('TranscriptSegment', { simpleResolvers: true, description: 'A stretch of speech with its timing' })
export class TranscriptSegmentType {
  @Field(() => Int, { description: '1-based position in the transcript' }) index!: number;
  @Field(() => Float, { description: 'Seconds from the start of the media' }) start!: number;
  @Field(() => Float, { description: 'Seconds from the start of the media' }) end!: number;
  @Field({ description: 'What was said' }) text!: string;
  @Field(() => String, { nullable: true, description: 'Speaker label; null unless the provider tells speakers apart' }) speaker!:
    | string
    | null;
  @Field(() => [TranscriptWordType], { nullable: true, description: 'Word timings, when the provider gives them; null otherwise' })
  @InheritsScope()
  words?: TranscriptWordType[] | null;
}

@ObjectType('Transcription', { simpleResolvers: true, description: 'A finished transcript with its timed segments and what it cost' })
export class TranscriptionType {
  @Field(() => ID, { description: 'The job id (job(id) shows it again; GET /api/transcriptions/{id}.srt and .vtt serve its subtitles)' })
  id!: string;
  @Field({ description: 'Always SUCCEEDED (a failure is an error instead)' }) status!: string;
  @Field({ description: 'The media URL, as checked' }) mediaUrl!: string;
  @Field(() => String, { nullable: true, description: 'ISO-639-1 code of the speech, as asked or detected; null when unknown' }) language!:
    | string
    | null;
  @Field(() => Float, { nullable: true, description: 'Length of the media in seconds; null when unknown' }) durationSeconds!: number | null;
  @Field({ description: 'The whole transcript as plain text' }) text!: string;
  @Field(() => [TranscriptSegmentType], {
    description: 'The transcript in the provider’s timed segments, in order (srt and vtt re-time them into subtitle cues)',
  })
  @InheritsScope()
  segments!: TranscriptSegmentType[];
  @Field({ description: 'The transcription provider that answered: openai, deepgram, assemblyai or local' }) provider!: string;
  @Field(() => CreditChargeType, { description: 'What the transcription cost (default 1 credit per started minute of media)' })
  @InheritsScope()
  credits!: CreditChargeType;
}

@InputType({ description: 'language: BCP-47 / ISO-639-1 code of the speech, e.g. en' })
export class TranscribeInput {
  @Field({
    description:
      'The media (a file or an HLS/DASH manifest), http(s), at most 2048 characters; private and loopback addresses are refused (URL_NOT_ALLOWED)',
  })
  mediaUrl!: string;
  @Field(() => String, {
    nullable: true,
    description: 'The language spoken, BCP-47 or ISO-639-1 (en, pt-BR); omitted: detected by the provider',
  })
  language?: string | null;
  @Field(() => String, {
    nullable: true,
    description: 'Where the job is POSTed when it ends, signed per Standard Webhooks (see webhookSecret); checked like mediaUrl',
  })
  webhookUrl?: string | null;
}
