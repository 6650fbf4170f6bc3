import Negotiator from 'negotiator';
import { AppError } from '../errors.js';

export type TranscriptFormat = 'json' | 'srt' | 'vtt';

export const SUBTITLE_CONTENT_TYPES: Record<Exclude<TranscriptFormat, 'json'>, string> = {
  srt: 'application/x-subrip; charset=utf-8',
  vtt: 'text/vtt; charset=utf-8',
};

/** `?format=` wins; otherwise the Accept header's most wanted of JSON, SRT and WebVTT; otherwise JSON. */
export function negotiateFormat(queryFormat: unknown, accept: string | undefined): TranscriptFormat {
  if (queryFormat !== undefined) {
    if (queryFormat === 'srt' || queryFormat === 'vtt' || queryFormat === 'json') return queryFormat;
    throw new AppError('INVALID_INPUT', 'format must be json, srt or vtt.', { format: 'must be json, srt or vtt' });
  }
  // Weighed as HTTP says (q-values, wildcards); on a tie the order here decides, so */* and no Accept are JSON.
  const [best] = new Negotiator({ headers: { accept } }).mediaTypes(OFFERED);
  return best ? FORMAT_OF[best] : 'json';
}

const FORMAT_OF: Record<string, TranscriptFormat> = {
  'application/json': 'json',
  'application/x-subrip': 'srt',
  'text/srt': 'srt',
  'text/vtt': 'vtt',
};
const OFFERED = Object.keys(FORMAT_OF);
