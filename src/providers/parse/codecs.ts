/**
 * What RFC 6381 codec strings (the `codecs` parameter of a MIME type, an HLS CODECS attribute, a
 * DASH @codecs) say about the streams of a format. Only what the strings name counts: a list with
 * no audio codec means "no sound", no list at all means "unknown".
 */

/** Sample-entry names (the part before the first dot) and plain names, by what they carry. */
const VIDEO = new Set([
  'avc1',
  'avc2',
  'avc3',
  'avc4',
  'hvc1',
  'hev1',
  'dvh1',
  'dvhe',
  'dva1',
  'dvav',
  'vp08',
  'vp8',
  'vp09',
  'vp9',
  'av01',
  'av1',
  'mp4v',
  'theora',
  'h264',
  'h265',
  'hevc',
  'vvc1',
  'vvi1',
  's263',
]);
const AUDIO = new Set([
  'mp4a',
  'ac-3',
  'ec-3',
  'ac-4',
  'opus',
  'vorbis',
  'flac',
  'fLaC',
  'alac',
  'mp3',
  'mp3a',
  '.mp3',
  'aac',
  'dtsc',
  'dtse',
  'dtsh',
  'dtsl',
  'mha1',
  'mhm1',
  'ulaw',
  'alaw',
  'pcm',
  'speex',
]);
/** Subtitle and timed-metadata entries: neither sound nor picture. */
const OTHER = new Set(['wvtt', 'stpp', 'tx3g', 'c608', 'c708', 'id3']);

/** The codec list of a string such as `avc1.64001f, mp4a.40.2` or `"vp9, opus"`, normalised to `a,b`; null when empty. */
export function normaliseCodecs(raw: string | null | undefined): string | null {
  if (!raw) return null;
  const list = raw
    .replace(/["']/g, '')
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  return list.length ? list.join(',') : null;
}

/** The codecs parameter of a MIME type (`video/mp4; codecs="avc1.42E01E, mp4a.40.2"`), normalised; null when absent. */
export function codecsOfType(type: string | null | undefined): string | null {
  const m = /;\s*codecs\s*=\s*("[^"]*"|'[^']*'|[^;]*)/i.exec(type ?? '');
  return m ? normaliseCodecs(m[1]) : null;
}

/** The kind of one codec string: video, audio, other, or null when unrecognised. */
function codecKind(codec: string): 'video' | 'audio' | 'other' | null {
  const lower = codec.toLowerCase();
  const entry = lower.split('.')[0];
  if (VIDEO.has(entry)) return 'video';
  if (AUDIO.has(entry) || AUDIO.has(codec.split('.')[0])) return 'audio';
  if (OTHER.has(entry)) return 'other';
  return null;
}

/**
 * Whether the listed codecs include sound and picture. Each is null when the list is absent or
 * holds a codec this table does not know (an unknown name might be either).
 */
export function streamsOfCodecs(codecs: string | null): { hasAudio: boolean | null; hasVideo: boolean | null } {
  const list = normaliseCodecs(codecs)?.split(',') ?? [];
  if (!list.length) return { hasAudio: null, hasVideo: null };
  const kinds = list.map(codecKind);
  const unknown = kinds.includes(null);
  const audio = kinds.includes('audio');
  const video = kinds.includes('video');
  return { hasAudio: audio ? true : unknown ? null : false, hasVideo: video ? true : unknown ? null : false };
}

/** The audio codecs of a list (for an audio rendition whose own codecs the manifest states only on the variant). */
export function audioCodecsOf(codecs: string | null): string | null {
  return normaliseCodecs((normaliseCodecs(codecs)?.split(',') ?? []).filter((c) => codecKind(c) === 'audio').join(','));
}

/** The video codecs of a list. */
export function videoCodecsOf(codecs: string | null): string | null {
  return normaliseCodecs((normaliseCodecs(codecs)?.split(',') ?? []).filter((c) => codecKind(c) === 'video').join(','));
}
