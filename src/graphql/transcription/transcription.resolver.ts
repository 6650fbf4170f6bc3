import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { GqlContext } from '../context.js';
import { RequiresScope } from '../scopes.js';
import { JobType } from '../jobs/job.graphql.js';
import { jobSuccessBody } from '../../modules/jobs/job.result.js';
import { toJobType } from '../../modules/jobs/job.view.js';
import { toSrt, toVtt } from '../../modules/transcription/subtitles.js';
import { TranscribeInput, TranscriptionType } from './transcription.graphql.js';

@ArgsType()
class TranscribeInputArgs {
  @Field(() => TranscribeInput, { description: 'What to transcribe' }) input!: TranscribeInput;
  @Field(() => String, {
    nullable: true,
    description:
      'The same key with the same input within 24 h replays the first result (startTranscription: the same job) and charges once',
  })
  idempotencyKey?: string | null;
}

@Resolver(() => TranscriptionType)
export class TranscriptionResolver {
  @Mutation(() => TranscriptionType, {
    description:
      'Transcribe a media URL and wait for the transcript (the same as POST /api/transcribe). Needs the transcribe scope and an active membership (MEMBERSHIP_REQUIRED). Costs 1 credit per started minute of media by default: held first (INSUFFICIENT_CREDITS), charged on success, released on failure. Errors as parse; NO_MEDIA_FOUND when the media has no sound. For long media prefer startTranscription.',
  })
  @RequiresScope('transcribe')
  async transcribe(
    @Args(() => TranscribeInputArgs) { input, idempotencyKey }: TranscribeInputArgs,
    @Ctx() ctx: GqlContext,
  ): Promise<TranscriptionType> {
    return ctx.services.transcription.transcribe(await ctx.principal(), { ...input }, { idempotencyKey });
  }

  @Mutation(() => JobType, {
    description:
      'Queue a transcription and return its job at once; follow it with job(id) or the jobUpdated subscription, or give a webhookUrl. Credits are held now and charged on success. PROVIDER_UNAVAILABLE when this instance runs no job queue.',
  })
  @RequiresScope('transcribe')
  async startTranscription(
    @Args(() => TranscribeInputArgs) { input, idempotencyKey }: TranscribeInputArgs,
    @Ctx() ctx: GqlContext,
  ): Promise<JobType> {
    const principal = await ctx.principal();
    const jobId = await ctx.services.transcription.start(principal, { ...input }, { idempotencyKey });
    return toJobType(await ctx.services.jobs.started(principal, jobId));
  }

  @Query(() => TranscriptionType, {
    description:
      'A finished transcription by its job id, as transcribe answered it, with its subtitles (srt, vtt): the same as GET /api/transcriptions/{id}.srt and .vtt (read scope). NOT_FOUND for a parse, a job not succeeded (yet), or another account’s job.',
  })
  @RequiresScope('read')
  async transcription(
    @Arg('jobId', () => ID, { description: 'The job of a transcription (transcribe’s id, startTranscription’s job)' }) jobId: string,
    @Ctx() ctx: GqlContext,
  ): Promise<TranscriptionType> {
    const job = await ctx.services.jobs.finishedTranscription(await ctx.principal(), jobId);
    return jobSuccessBody(job) as unknown as TranscriptionType;
  }

  @FieldResolver(() => String, {
    description: 'The transcript as a SubRip (SRT) file: cues of at most two lines of 42 characters, re-timed for reading',
  })
  srt(@Root() t: TranscriptionType): string {
    return toSrt(t.segments);
  }

  @FieldResolver(() => String, { description: 'The transcript as a WebVTT file, with the same cues as srt' })
  vtt(@Root() t: TranscriptionType): string {
    return toVtt(t.segments);
  }
}
