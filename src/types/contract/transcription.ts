import { z } from 'zod';
import { component, creditsSchema } from './common.js';

const seconds = (what: string) => z.number().meta({ description: what });

export const transcriptWordSchema = z.object({
  start: seconds('seconds from the start of the media'),
  end: seconds('seconds from the start of the media'),
  text: z.string(),
  speaker: z.string().nullable().optional(),
});

export const transcriptSegmentSchema = z.object({
  index: z.int().meta({ description: '1-based position' }),
  start: seconds('seconds from the start of the media'),
  end: seconds('seconds from the start of the media'),
  text: z.string(),
  speaker: z.string().nullable().meta({ description: 'speaker label, when the provider tells speakers apart' }),
  words: z.array(transcriptWordSchema).nullable().optional().meta({ description: 'word timings, when the provider gives them' }),
});

export const transcriptionResponseSchema = component(
  'TranscriptionResponse',
  z.object({
    id: z.uuid().meta({ description: 'the job id (GET /api/jobs/{id}, GET /api/transcriptions/{id}.srt)' }),
    status: z.literal('SUCCEEDED'),
    mediaUrl: z.string(),
    language: z.string().nullable().meta({ description: 'ISO-639-1 code of the speech, when known' }),
    durationSeconds: z.number().nullable().meta({ description: 'length of the audio transcribed and charged for, in seconds' }),
    text: z.string().meta({ description: 'the whole transcript' }),
    segments: z.array(transcriptSegmentSchema),
    provider: z.string().meta({ description: 'the transcription provider that answered: openai, deepgram, assemblyai or local' }),
    credits: creditsSchema,
  }),
  'The success body of a transcription, on both doors',
);

export type TranscriptionResponseBody = z.infer<typeof transcriptionResponseSchema>;
