import type { AUDIO_FORMATS } from '../types/contract/parse.js';

export { AUDIO_FORMATS } from '../types/contract/parse.js';
export type AudioFormat = (typeof AUDIO_FORMATS)[number];

/** What the gateway does to its sources on the way: nothing, take the sound out, leave the sound out, or join picture and sound. */
export type StreamProcessing = 'pass' | `audio:${AudioFormat}` | 'mute' | 'merge';

/** How a processed stream is written: ffmpeg's output options, and what the caller is told it gets. */
export interface StreamRecipe {
  /** The container as the parse answer names it (mp4, m4a, mp3, ogg, opus, wav, mka). */
  container: string;
  contentType: string;
  /** The file name's extension. */
  extension: string;
  /** ffmpeg's output options (stream selection, codecs, muxer), before the output itself. */
  output: string[];
}

/** Fragmented MP4: playable and seekable by players while it is still being written, never a seek back in the output. */
const FRAGMENTED = ['-movflags', 'frag_keyframe+empty_moov+default_base_moof', '-f', 'mp4'];

/**
 * AAC from MPEG-TS (HLS segments) comes with ADTS headers, which MP4 does not hold: ffmpeg 5 does not
 * always add the filter by itself. The filter passes AAC without them through untouched.
 */
const aacToMp4 = (codecs: string | null) => (audioCodecFamily(codecs) === 'aac' ? ['-bsf:a', 'aac_adtstoasc'] : []);

/** What a codec list says of its audio: aac, mp3, opus, vorbis, flac, or null when nothing says. */
export function audioCodecFamily(codecs: string | null): 'aac' | 'mp3' | 'opus' | 'vorbis' | 'flac' | null {
  for (const raw of (codecs ?? '').toLowerCase().split(',')) {
    const c = raw.trim();
    if (c === 'mp4a.40.34' || c === 'mp4a.6b' || c === 'mp4a.69' || c === 'mp3') return 'mp3';
    if (c.startsWith('mp4a') || c === 'aac') return 'aac';
    if (c === 'opus') return 'opus';
    if (c === 'vorbis') return 'vorbis';
    if (c === 'flac' || c === 'fla') return 'flac';
  }
  return null;
}

/** Containers of the MP4 family (DASH is fragmented MP4): whatever audio they hold, MP4 can hold copied. */
const MP4_FAMILY = new Set(['mp4', 'm4a', 'mov', 'mpd']);

/** The audio of the first input's first audio stream, in the format asked; `best` copies whatever codec it is. */
function audioRecipe(format: AudioFormat, codecs: string | null, container: string | null = null): StreamRecipe {
  const family = audioCodecFamily(codecs);
  const take = ['-map', '0:a:0', '-vn', '-sn', '-dn'];
  switch (format) {
    case 'mp3':
      return {
        container: 'mp3',
        contentType: 'audio/mpeg',
        extension: 'mp3',
        output: [...take, ...(family === 'mp3' ? ['-c:a', 'copy'] : ['-c:a', 'libmp3lame', '-q:a', '2']), '-f', 'mp3'],
      };
    case 'opus':
      return {
        container: 'opus',
        contentType: 'audio/ogg; codecs=opus',
        extension: 'opus',
        output: [...take, ...(family === 'opus' ? ['-c:a', 'copy'] : ['-c:a', 'libopus', '-b:a', '128k']), '-f', 'ogg'],
      };
    case 'm4a':
      return {
        container: 'm4a',
        contentType: 'audio/mp4',
        extension: 'm4a',
        output: [...take, ...(family === 'aac' ? ['-c:a', 'copy', ...aacToMp4(codecs)] : ['-c:a', 'aac', '-b:a', '192k']), ...FRAGMENTED],
      };
    case 'wav':
      // The sizes in a WAV header cannot be known while it streams: ffmpeg leaves them at their largest, as players expect.
      return { container: 'wav', contentType: 'audio/wav', extension: 'wav', output: [...take, '-c:a', 'pcm_s16le', '-f', 'wav'] };
    case 'best': {
      const copy = [...take, '-c:a', 'copy'];
      if (family === 'aac')
        return { container: 'm4a', contentType: 'audio/mp4', extension: 'm4a', output: [...copy, ...aacToMp4(codecs), ...FRAGMENTED] };
      if (family === 'mp3') return { container: 'mp3', contentType: 'audio/mpeg', extension: 'mp3', output: [...copy, '-f', 'mp3'] };
      if (family === 'opus')
        return { container: 'opus', contentType: 'audio/ogg; codecs=opus', extension: 'opus', output: [...copy, '-f', 'ogg'] };
      if (family === 'vorbis') return { container: 'ogg', contentType: 'audio/ogg', extension: 'ogg', output: [...copy, '-f', 'ogg'] };
      // Nothing says which codec it is: what an MP4 held goes into MP4; anything else into Matroska, which holds any codec.
      if (MP4_FAMILY.has(container ?? ''))
        return { container: 'm4a', contentType: 'audio/mp4', extension: 'm4a', output: [...copy, ...FRAGMENTED] };
      return { container: 'mka', contentType: 'audio/x-matroska', extension: 'mka', output: [...copy, '-f', 'matroska'] };
    }
  }
}

/**
 * ffmpeg's output options for a processing of its inputs (`sources[i]` is input i). Nothing is
 * re-encoded unless an audio format asks for another codec than the source's.
 */
export function streamRecipe(
  processing: StreamProcessing,
  sources: readonly { manifest: string | null; codecs: string | null; container?: string | null }[],
  kind: 'video' | 'audio',
): StreamRecipe {
  const first = sources[0];
  if (processing.startsWith('audio:')) return audioRecipe(processing.slice(6) as AudioFormat, first?.codecs ?? null, first?.container);
  if (processing === 'pass' && kind === 'audio') return audioRecipe('best', first?.codecs ?? null, first?.container);
  const video = { container: 'mp4', contentType: 'video/mp4', extension: 'mp4' };
  if (processing === 'mute') return { ...video, output: ['-map', '0:v:0', '-an', '-sn', '-dn', '-c:v', 'copy', ...FRAGMENTED] };
  if (processing === 'merge')
    return {
      ...video,
      output: ['-map', '0:v:0', '-map', '1:a:0', '-sn', '-dn', '-c', 'copy', ...aacToMp4(sources[1]?.codecs ?? null), ...FRAGMENTED],
    };
  // A manifest passed through: its picture and sound, remuxed into one file.
  return {
    ...video,
    output: ['-map', '0:v:0', '-map', '0:a:0?', '-sn', '-dn', '-c', 'copy', ...aacToMp4(sources[0]?.codecs ?? null), ...FRAGMENTED],
  };
}
