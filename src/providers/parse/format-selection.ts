import { ProviderError } from '../../errors.js';
import { audioCodecsOf, videoCodecsOf } from './codecs.js';
import type { MediaFormat, ParseMode, ParseQuality } from './parse.types.js';

/** What selectFormat returns: the chosen format and the other formats of its kind, best first. */
export interface FormatSelection {
  media: MediaFormat;
  alternatives: MediaFormat[];
}

/**
 * Among equal heights: mp4 (and its audio twin m4a), then webm, then other files, then files of
 * unknown type, then manifests (a direct file plays anywhere; a manifest needs an HLS/DASH player).
 */
function containerRank(f: MediaFormat): number {
  const c = f.container;
  if (c === 'mp4' || c === 'm4a') return 0;
  if (c === 'webm' || c === 'weba') return 1;
  if (c === null) return 3;
  if (c === 'm3u8') return 4;
  if (c === 'mpd') return 5;
  return 2;
}

/**
 * The order the contract's quality rule implies, so the first is the pick and the rest are the
 * runners-up: heights at or below the limit, tallest first; then unknown heights; then heights above
 * the limit, shortest first. `max` has no limit: tallest first, unknown heights last.
 */
export function rankByQuality(formats: MediaFormat[], quality: ParseQuality): MediaFormat[] {
  const limit = quality === 'max' ? Infinity : Number(quality);
  const band = (f: MediaFormat) => (f.height === null ? 1 : f.height <= limit ? 0 : 2);
  return [...formats].sort((a, b) => {
    const byBand = band(a) - band(b);
    if (byBand) return byBand;
    const ha = a.height ?? 0;
    const hb = b.height ?? 0;
    const byHeight = band(a) === 2 ? ha - hb : hb - ha;
    return byHeight || containerRank(a) - containerRank(b);
  });
}

/** Keeps the first format of each URL (several video variants may share one audio track). */
function uniqueByUrl(formats: MediaFormat[]): MediaFormat[] {
  const seen = new Set<string>();
  return formats.filter((f) => !seen.has(f.url) && seen.add(f.url));
}

/** Whether a video plays with sound: 2 known (its own or a companion track), 1 unknown, 0 known silent. */
const soundRank = (f: MediaFormat): number => (f.hasAudio === true || f.audio ? 2 : f.hasAudio === null ? 1 : 0);

/** The message when mode "mute" finds nothing: callers must learn that no silent format exists. */
export const NO_SILENT_FORMAT =
  'No silent format exists, and no video is known to have sound to remove: nothing says whether these videos are silent. Use mode "auto" for the video as it is.';

/** Videos known to carry sound of their own, by quality: what the gateway can take the sound out of, or leave out. */
const withSound = (videos: MediaFormat[], quality: ParseQuality) =>
  rankByQuality(
    videos.filter((v) => v.hasAudio === true),
    quality,
  );

/** The sound of a video with sound, as an audio format the gateway's stream makes (mode "audio", no audio-only format). */
function soundOf(v: MediaFormat): MediaFormat {
  return {
    ...v,
    kind: 'audio',
    // The source's, until the stream that makes it names its own.
    container: v.container,
    width: null,
    height: null,
    codecs: audioCodecsOf(v.codecs),
    hasAudio: true,
    hasVideo: false,
    audio: null,
    derived: 'audio',
  };
}

/** A video with sound without it, as the gateway's stream makes it (mode "mute", no silent format). */
function silenced(v: MediaFormat): MediaFormat {
  return { ...v, codecs: videoCodecsOf(v.codecs), hasAudio: false, audio: null, derived: 'mute' };
}

/**
 * Chooses the format for a mode and quality as the contract says, or throws ProviderError(no_media).
 * `auto`: a video, preferring ones with sound, else the audio of an audio-only page; `audio`: an
 * audio-only format, else a video variant's separate audio track, else the sound of a video with
 * sound (`derived: 'audio'`); `mute`: a video without sound, else a video with sound without it
 * (`derived: 'mute'`). Derived formats exist only as the gateway's streams (modules/streams).
 * The alternatives are the other formats of the chosen kind, best first, those fitting the mode first.
 */
export function selectFormat(provider: string, formats: MediaFormat[], mode: ParseMode, quality: ParseQuality): FormatSelection {
  const videos = uniqueByUrl(formats.filter((f) => f.kind === 'video'));
  const audios = uniqueByUrl(formats.filter((f) => f.kind === 'audio'));
  // Each candidate list is fitting formats first; the pick is its head.
  let ranked: MediaFormat[];
  if (mode === 'audio') {
    // Audio-only formats first; the tracks that come with video variants serve when there are none.
    const tracks = videos.flatMap((v) => (v.audio ? [v.audio] : []));
    ranked = uniqueByUrl([...rankByQuality(audios, quality), ...rankByQuality(tracks, quality)]);
    // None: the sound of the videos that have it, taken out by the gateway's stream.
    if (!ranked.length) ranked = withSound(videos, quality).map(soundOf);
    if (!ranked.length)
      throw new ProviderError(
        provider,
        'no_media',
        'The page offers no audio-only format, no separate audio track, and no video known to have sound.',
      );
  } else if (mode === 'mute') {
    // The caller asked for no sound: a variant known to be silent, returned without its companion track.
    let silent: MediaFormat[] = videos.filter((v) => v.hasAudio === false).map((v) => ({ ...v, audio: null }));
    // None: the videos with sound, their sound left out by the gateway's stream.
    if (!silent.length) silent = withSound(videos, quality).map(silenced);
    if (!silent.length) throw new ProviderError(provider, 'no_media', NO_SILENT_FORMAT);
    const made = silent.some((v) => v.derived);
    ranked = made
      ? rankByQuality(silent, quality)
      : [
          ...rankByQuality(silent, quality),
          ...rankByQuality(
            videos.filter((v) => v.hasAudio !== false),
            quality,
          ),
        ];
  } else if (videos.length) {
    // Known sound first, then unknown, then known silence: a video a person can hear is what "auto" means.
    ranked = [2, 1, 0].flatMap((rank) =>
      rankByQuality(
        videos.filter((v) => soundRank(v) === rank),
        quality,
      ),
    );
  } else {
    ranked = rankByQuality(audios, quality);
    if (!ranked.length) throw new ProviderError(provider, 'no_media', 'The page declares no video or audio.');
  }
  const [media, ...alternatives] = ranked;
  return { media, alternatives };
}
