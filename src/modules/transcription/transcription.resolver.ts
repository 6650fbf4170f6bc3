import { Args, ArgsType, Ctx, Field, FieldResolver, Mutation, Resolver, Root } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import { toSrt, toVtt } from './subtitles.js';
import { TranscribeInput, TranscriptionType } from './transcription.graphql.js';

@ArgsType()
class TranscribeInputArgs {
  @Field(() => TranscribeInput) input!: TranscribeInput;
  @Field(() => String, { nullable: true, description: 'The same key with the same input within 24 h replays the first result and charges once' })
  idempotencyKey?: string | null;
}

@Resolver(() => TranscriptionType)
export class TranscriptionResolver {
  @Mutation(() => TranscriptionType, { description: 'Transcribe a media URL (the same as POST /api/transcribe).' })
  async transcribe(@Args(() => TranscribeInputArgs) { input, idempotencyKey }: TranscribeInputArgs, @Ctx() ctx: GqlContext): Promise<TranscriptionType> {
    return ctx.services.transcription.transcribe(await ctx.principal(), { ...input }, { idempotencyKey });
  }

  @FieldResolver(() => String, { description: 'The transcript as SubRip (SRT)' })
  srt(@Root() t: TranscriptionType): string {
    return toSrt(t.segments);
  }

  @FieldResolver(() => String, { description: 'The transcript as WebVTT' })
  vtt(@Root() t: TranscriptionType): string {
    return toVtt(t.segments);
  }
}
