import { Field, Float, ID, InputType, Int, ObjectType } from 'type-graphql';
import { CreditChargeType } from '../parse/parse.graphql.js';

@ObjectType('TranscriptWord', { description: 'One word with its own timing' })
export class TranscriptWordType {
  @Field(() => Float, { description: 'seconds' }) start!: number;
  @Field(() => Float, { description: 'seconds' }) end!: number;
  @Field() text!: string;
  @Field(() => String, { nullable: true }) speaker?: string | null;
}

@ObjectType('TranscriptSegment')
export class TranscriptSegmentType {
  @Field(() => Int) index!: number;
  @Field(() => Float, { description: 'seconds' }) start!: number;
  @Field(() => Float, { description: 'seconds' }) end!: number;
  @Field() text!: string;
  @Field(() => String, { nullable: true }) speaker!: string | null;
  @Field(() => [TranscriptWordType], { nullable: true, description: 'Word timings, when the provider gives them' }) words?: TranscriptWordType[] | null;
}

@ObjectType('Transcription')
export class TranscriptionType {
  @Field(() => ID, { description: 'The job id' }) id!: string;
  @Field() status!: string;
  @Field() mediaUrl!: string;
  @Field(() => String, { nullable: true }) language!: string | null;
  @Field(() => Float, { nullable: true }) durationSeconds!: number | null;
  @Field() text!: string;
  @Field(() => [TranscriptSegmentType]) segments!: TranscriptSegmentType[];
  @Field() provider!: string;
  @Field(() => CreditChargeType) credits!: CreditChargeType;
}

@InputType({ description: 'language: BCP-47 / ISO-639-1 code of the speech, e.g. en' })
export class TranscribeInput {
  @Field() mediaUrl!: string;
  @Field(() => String, { nullable: true }) language?: string | null;
  @Field(() => String, { nullable: true, description: 'Where the job is POSTed when it ends, signed per Standard Webhooks (see webhookSecret)' })
  webhookUrl?: string | null;
}
