import { AppError } from '../errors.js';

export type TranscriptFormat = 'json' | 'srt' | 'vtt';

export const SUBTITLE_CONTENT_TYPES: Record<Exclude<TranscriptFormat, 'json'>, string> = {
  srt: 'application/x-subrip; charset=utf-8',
  vtt: 'text/vtt; charset=utf-8',
};

/** `?format=` wins; otherwise the Accept header asks for SRT or WebVTT; otherwise JSON. */
export function negotiateFormat(queryFormat: unknown, accept: string | undefined): TranscriptFormat {
  if (queryFormat !== undefined) {
    if (queryFormat === 'srt' || queryFormat === 'vtt' || queryFormat === 'json') return queryFormat;
    throw new AppError('INVALID_INPUT', 'format must be json, srt or vtt.', { format: 'must be json, srt or vtt' });
  }
  const types = (accept ?? '').toLowerCase().split(',').map((t) => t.split(';')[0].trim());
  for (const t of types) {
    if (t === 'application/json' || t === '*/*') return 'json';
    if (t === 'application/x-subrip' || t === 'text/srt') return 'srt';
    if (t === 'text/vtt') return 'vtt';
  }
  return 'json';
}
