import HLS from 'hls-parser';
import { parse as parseMpd, type MpdPlaylist } from 'mpd-parser';
import { audioCodecsOf, normaliseCodecs, streamsOfCodecs, videoCodecsOf } from './codecs.js';
import { isoDurationSeconds } from './jsonld.extractor.js';
import { extensionOf, mediaTypeOfExtension } from './media-types.js';
import { mediaFormat, type MediaFormat } from './parse.types.js';

// The library's lenient mode logs to the console; problems surface as our own errors instead.
HLS.setOptions({ strictMode: false, silent: true });

/** What a manifest offers: itself (for adaptive players) and each variant or rendition a client can fetch alone. */
export interface ManifestReading {
  /** The manifest URL as one adaptive format (a player picks the variant). */
  manifest: MediaFormat;
  /** Variants and renditions with their own URL, best described first. */
  formats: MediaFormat[];
  /** A media playlist's first segment (and its initialisation section), enough to probe its streams. */
  firstSegment: { url: string; init: string | null; durationSeconds: number | null } | null;
}

/** Thrown when the text is not the manifest it was served as. */
export class ManifestError extends Error {}

const isHlsText = (text: string) => /^\uFEFF?\s*#EXTM3U/.test(text);
const isDashText = (text: string) => /<MPD[\s>]/.test(text.slice(0, 4096));

/** Whether a fetched text is an HLS playlist or a DASH manifest, by content (servers mislabel both). */
export function manifestKind(text: string): 'm3u8' | 'mpd' | null {
  if (isHlsText(text)) return 'm3u8';
  if (isDashText(text)) return 'mpd';
  return null;
}

/** Absolute http(s) URL of a manifest reference, or null (data:, skd:, garbage). */
function absolute(ref: string | undefined, base: string): string | null {
  if (!ref) return null;
  const url = URL.parse(ref, base);
  return url && (url.protocol === 'http:' || url.protocol === 'https:') ? url.href : null;
}

/**
 * Reads an HLS playlist. A master playlist's variants become formats (RESOLUTION, BANDWIDTH,
 * CODECS); a variant whose group has audio renditions with their own URI carries no sound itself
 * and gets the group's default rendition as `audio`; those renditions are audio formats. A media
 * playlist is one format whose streams only a probe of its first segment can tell.
 */
export function readHls(text: string, url: string): ManifestReading {
  if (!isHlsText(text)) throw new ManifestError('The playlist is not an HLS playlist.');
  let playlist: ReturnType<typeof HLS.parse>;
  try {
    playlist = HLS.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    throw new ManifestError('The HLS playlist cannot be read.', { cause: err });
  }
  if (!playlist.isMasterPlaylist) {
    const media = playlist as HLS.types.MediaPlaylist;
    const total = media.segments.reduce((s, seg) => s + (seg.duration ?? 0), 0);
    const first = media.segments[0];
    const segmentUrl = absolute(first?.uri, url);
    return {
      manifest: mediaFormat({
        url,
        kind: 'video',
        container: 'm3u8',
        durationSeconds: media.endlist && total > 0 ? Math.round(total * 1000) / 1000 : null,
      }),
      formats: [],
      firstSegment: segmentUrl
        ? { url: segmentUrl, init: absolute(first.map?.uri, url), durationSeconds: first.duration > 0 ? first.duration : null }
        : null,
    };
  }
  const master = playlist as HLS.types.MasterPlaylist;
  // Keyed by URL: the library gives each variant its own copy of a group's renditions.
  const renditions = new Map<string, MediaFormat>();
  const formats: MediaFormat[] = [];
  for (const variant of master.variants) {
    if (variant.isIFrameOnly) continue;
    const variantUrl = absolute(variant.uri, url);
    if (!variantUrl) continue;
    const codecs = normaliseCodecs(variant.codecs);
    const streams = streamsOfCodecs(codecs);
    // Renditions with a URI are separate streams; one without a URI is the audio muxed into the variant.
    const separate = variant.audio.filter((r) => r.uri);
    let companion: MediaFormat | null = null;
    for (const r of separate) {
      const renditionUrl = absolute(r.uri, url);
      if (!renditionUrl) continue;
      let format = renditions.get(renditionUrl);
      if (!format) {
        format = mediaFormat({ url: renditionUrl, kind: 'audio', container: 'm3u8', codecs: audioCodecsOf(codecs), hasAudio: true });
        renditions.set(renditionUrl, format);
      }
      if (!companion || r.isDefault) companion = format;
    }
    const hasVideo = streams.hasVideo ?? (variant.resolution ? true : null);
    const audioOnly = hasVideo === false && streams.hasAudio === true;
    formats.push(
      mediaFormat({
        url: variantUrl,
        kind: audioOnly ? 'audio' : 'video',
        container: 'm3u8',
        width: variant.resolution?.width ?? null,
        height: variant.resolution?.height ?? null,
        bitrate: variant.bandwidth || null,
        codecs: companion ? videoCodecsOf(codecs) : codecs,
        hasAudio: companion ? false : streams.hasAudio,
        audio: audioOnly ? null : companion,
      }),
    );
  }
  // The audio renditions also play alone (mode audio).
  const all = [...formats, ...renditions.values()];
  if (!all.length) throw new ManifestError('The HLS master playlist lists no playable variant.');
  const anyVideo = formats.some((f) => f.kind === 'video');
  const sound = formats.some((f) => f.hasAudio === true || f.audio) ? true : formats.every((f) => f.hasAudio === false) ? false : null;
  return {
    manifest: mediaFormat({ url, kind: anyVideo ? 'video' : 'audio', container: 'm3u8', hasAudio: sound }),
    formats: all,
    firstSegment: null,
  };
}

/**
 * Reads a DASH manifest. Representations stored as one file each (BaseURL with SegmentBase, as
 * on-demand profiles do) become formats of their own; the video ones get the best audio
 * representation as `audio`. Segmented representations can only be played through the manifest.
 */
export function readDash(text: string, url: string): ManifestReading {
  if (!isDashText(text)) throw new ManifestError('The manifest is not a DASH manifest.');
  let parsed: ReturnType<typeof parseMpd>;
  try {
    parsed = parseMpd(text, { manifestUri: url, eventHandler: () => {} });
  } catch (err) {
    throw new ManifestError('The DASH manifest cannot be read.', { cause: err });
  }
  const m = /mediaPresentationDuration\s*=\s*"([^"]+)"/.exec(text);
  const durationSeconds = m ? isoDurationSeconds(m[1]) : null;
  const audioLists = Object.values(parsed.mediaGroups?.AUDIO ?? {}).flatMap((group) => Object.values(group));
  // The default language's representations first, then the rest; best bitrate first within each.
  const audioPlaylists = audioLists
    .sort((a, b) => Number(!!b.default) - Number(!!a.default))
    .flatMap((l) => [...(l.playlists ?? [])].sort((a, b) => (b.attributes.BANDWIDTH ?? 0) - (a.attributes.BANDWIDTH ?? 0)));
  const audios = audioPlaylists.flatMap((p) => {
    const file = singleFile(p);
    return file ? [representation(p, file, 'audio', durationSeconds)] : [];
  });
  const videoPlaylists = parsed.playlists ?? [];
  const separateAudio = audioPlaylists.length > 0;
  const videos = videoPlaylists.flatMap((p) => {
    const file = singleFile(p);
    if (!file) return [];
    const format = representation(p, file, 'video', durationSeconds);
    if (separateAudio && format.hasAudio !== true) {
      format.hasAudio = false;
      format.audio = audios[0] ?? null;
    }
    return [format];
  });
  if (!videoPlaylists.length && !audioPlaylists.length) throw new ManifestError('The DASH manifest lists no representation.');
  const videoStreams = videoPlaylists.map((p) => streamsOfCodecs(p.attributes.CODECS ?? null).hasAudio);
  return {
    manifest: mediaFormat({
      url,
      kind: videoPlaylists.length ? 'video' : 'audio',
      container: 'mpd',
      durationSeconds,
      hasAudio:
        separateAudio || videoStreams.includes(true) ? true : videoStreams.length && videoStreams.every((a) => a === false) ? false : null,
    }),
    formats: [...videos, ...audios],
    firstSegment: null,
  };
}

/**
 * The one file a representation is stored in (SegmentBase, or a SegmentList of byte ranges of one
 * BaseURL), or null when it is split into files of its own.
 */
function singleFile(p: MpdPlaylist): string | null {
  if (p.sidx?.resolvedUri) return absolute(p.sidx.resolvedUri, p.sidx.resolvedUri);
  const files = new Set<string>();
  for (const segment of p.segments ?? []) {
    files.add(segment.resolvedUri);
    if (segment.map?.resolvedUri) files.add(segment.map.resolvedUri);
  }
  const [only] = files;
  return files.size === 1 ? absolute(only, only) : null;
}

function representation(p: MpdPlaylist, file: string, kind: 'video' | 'audio', durationSeconds: number | null): MediaFormat {
  const codecs = normaliseCodecs(p.attributes.CODECS);
  const byExt = mediaTypeOfExtension(extensionOf(file));
  // An .mp4 holding only sound is M4A; files named without a known extension are taken as MP4.
  const named = byExt && byExt.kind !== 'image' ? byExt.container : null;
  const container = kind === 'audio' ? (named === 'mp4' || !named ? 'm4a' : named) : (named ?? 'mp4');
  const streams = streamsOfCodecs(codecs);
  return mediaFormat({
    url: file,
    kind,
    container,
    width: kind === 'video' ? (p.attributes.RESOLUTION?.width ?? null) : null,
    height: kind === 'video' ? (p.attributes.RESOLUTION?.height ?? null) : null,
    bitrate: p.attributes.BANDWIDTH ?? null,
    codecs,
    durationSeconds,
    hasAudio: kind === 'audio' ? true : streams.hasAudio,
  });
}
