import { ProviderError } from '../../errors.js';
import type { MediaFormat, ParseMode, ParseQuality } from './parse.types.js';

const CONTAINER_RANK: Record<string, number> = { mp4: 0, webm: 1, mov: 2, m3u8: 3, mpd: 4 };
const rankContainer = (f: MediaFormat) => CONTAINER_RANK[f.container ?? ''] ?? 5;

/** Best first: taller, then a file over a manifest, then mp4 over webm over the rest. */
function byPreference(a: MediaFormat, b: MediaFormat): number {
  return (b.height ?? -1) - (a.height ?? -1) || rankContainer(a) - rankContainer(b);
}

/**
 * Picks by height as the contract says: the tallest at or below the requested height (`max`: the
 * tallest there is); when every known height is taller, the shortest; formats of unknown height
 * only when no known height fits.
 */
function pickByQuality(candidates: MediaFormat[], quality: ParseQuality): MediaFormat {
  const sorted = [...candidates].sort(byPreference);
  const known = sorted.filter((f) => f.height !== null);
  const unknown = sorted.filter((f) => f.height === null);
  if (quality === 'max') return known[0] ?? unknown[0];
  const limit = Number(quality);
  const fitting = known.find((f) => f.height! <= limit);
  if (fitting) return fitting;
  if (unknown.length) return unknown[0];
  return known[known.length - 1];
}

/** Chooses the format for mode and quality; the others of the same kind are the alternatives, best first. */
export function selectFormat(
  provider: string,
  formats: MediaFormat[],
  mode: ParseMode,
  quality: ParseQuality,
): { media: MediaFormat; alternatives: MediaFormat[] } {
  const videos = formats.filter((f) => f.kind === 'video');
  const audios = formats.filter((f) => f.kind === 'audio');
  let pool: MediaFormat[];
  if (mode === 'audio') {
    pool = audios.length ? audios : videos.flatMap((v) => (v.audio ? [v.audio] : []));
    if (!pool.length) throw new ProviderError(provider, 'no_media', 'The page offers no audio-only format.');
  } else if (mode === 'mute') {
    pool = videos.filter((v) => !v.hasAudio);
    if (!pool.length) {
      throw new ProviderError(provider, 'no_media', 'The page offers no video without sound; use mode "auto" for the video with sound.');
    }
  } else {
    const withSound = videos.filter((v) => v.hasAudio || v.audio);
    pool = withSound.length ? withSound : videos.length ? videos : audios;
    if (!pool.length) throw new ProviderError(provider, 'no_media', 'The page declares no video or audio.');
  }
  const media = pickByQuality(pool, quality);
  const alternatives = [...pool].sort(byPreference).filter((f) => f !== media);
  return { media, alternatives };
}
