import { Args, ArgsType, Ctx, Field, FieldResolver, Mutation, Resolver, Root } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import { JobType } from '../jobs/job.graphql.js';
import { toJobType } from '../jobs/job.view.js';
import { toSrt, toVtt } from './subtitles.js';
import { TranscribeInput, TranscriptionType } from './transcription.graphql.js';

@ArgsType()
class TranscribeInputArgs {
  @Field(() => TranscribeInput) input!: TranscribeInput;
  @Field(() => String, { nullable: true, description: 'The same key with the same input within 24 h replays the first result (startTranscription: the same job) and charges once' })
  idempotencyKey?: string | null;
}

@Resolver(() => TranscriptionType)
export class TranscriptionResolver {
  @Mutation(() => TranscriptionType, { description: 'Transcribe a media URL (the same as POST /api/transcribe).' })
  async transcribe(@Args(() => TranscribeInputArgs) { input, idempotencyKey }: TranscribeInputArgs, @Ctx() ctx: GqlContext): Promise<TranscriptionType> {
    return ctx.services.transcription.transcribe(await ctx.principal(), { ...input }, { idempotencyKey });
  }

  @Mutation(() => JobType, { description: 'Queue a transcription and return its job at once; follow it with job(id). Credits are held now and charged on success.' })
  async startTranscription(@Args(() => TranscribeInputArgs) { input, idempotencyKey }: TranscribeInputArgs, @Ctx() ctx: GqlContext): Promise<JobType> {
    const principal = await ctx.principal();
    const jobId = await ctx.services.transcription.start(principal, { ...input }, { idempotencyKey });
    return toJobType(await ctx.services.jobs.get(principal.accountId, jobId));
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
