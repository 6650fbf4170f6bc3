import { Arg, Ctx, FieldResolver, Mutation, Resolver, Root } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import { toSrt, toVtt } from './subtitles.js';
import { TranscribeInput, TranscriptionType } from './transcription.graphql.js';

@Resolver(() => TranscriptionType)
export class TranscriptionResolver {
  @Mutation(() => TranscriptionType, { description: 'Transcribe a media URL (the same as POST /api/transcribe).' })
  async transcribe(@Arg('input', () => TranscribeInput) input: TranscribeInput, @Ctx() ctx: GqlContext): Promise<TranscriptionType> {
    return ctx.services.transcription.transcribe(await ctx.principal(), { ...input });
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
