import { describeRecordingSubtitles } from '../support/recording-subtitles.js';

// Half an hour, in pieces of ten minutes (OPENAI_PIECE_SECONDS' default).
describeRecordingSubtitles(1800, 600);
