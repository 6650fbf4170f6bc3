import { ProviderError } from '../../errors.js';
import { selectFormat, type FormatSelection } from './format-selection.js';
import {
  mediaFormat,
  type CoverImage,
  type MediaFormat,
  type ParseItem,
  type ParseMode,
  type ParseQuality,
  type ParseResult,
} from './parse.types.js';

/** One media of a page or playlist, as a provider found it. */
export interface ItemSource {
  formats: MediaFormat[];
  title: string | null;
  cover: CoverImage | null;
  durationSeconds: number | null;
}

/** A picture that is an item of a gallery post. */
export interface PictureSource extends CoverImage {
  title: string | null;
}

/** An item whose format the mode and quality chose. */
export interface ChosenItem {
  source: ItemSource;
  selection: FormatSelection;
}

/**
 * Chooses a format in every item the mode fits (an item with no silent video has no place in a
 * "mute" answer); when none fits, the first item's reason is the answer.
 */
export function chooseItems(provider: string, sources: ItemSource[], mode: ParseMode, quality: ParseQuality): ChosenItem[] {
  const chosen: ChosenItem[] = [];
  let firstFailure: unknown = null;
  for (const source of sources) {
    try {
      chosen.push({ source, selection: selectFormat(provider, source.formats, mode, quality) });
    } catch (err) {
      if (!(err instanceof ProviderError) || err.kind !== 'no_media') throw err;
      firstFailure ??= err;
    }
  }
  if (!chosen.length) throw firstFailure ?? new ProviderError(provider, 'no_media', 'The page declares no video or audio.');
  return chosen;
}

/** A copy of a format without the fields an item adds. */
function plain(f: MediaFormat): MediaFormat {
  return { ...f, audio: f.audio ? { ...f.audio } : (f.audio ?? null) };
}

/**
 * The result's media parts: the first chosen item is `media` with its runners-up as
 * `alternatives`; a post with two or more items lists them all as `items` (pictures only when the
 * mode is auto: they have no sound to keep or drop), capped at `maxItems` with the rest counted.
 */
export function buildMedia(
  chosen: ChosenItem[],
  pictures: PictureSource[],
  mode: ParseMode,
  maxItems: number,
  /** How many items the upstream says there are, when it listed only some (a capped playlist). */
  declaredTotal = 0,
): Pick<ParseResult, 'media' | 'alternatives' | 'items' | 'itemsTotal'> {
  const [first] = chosen;
  const media = plain(first.selection.media);
  media.durationSeconds ??= first.source.durationSeconds;
  const all: ParseItem[] = chosen.map(({ source, selection }) => ({
    ...plain(selection.media),
    durationSeconds: selection.media.durationSeconds ?? source.durationSeconds,
    title: source.title,
    cover: source.cover,
    alternatives: selection.alternatives.map(plain),
  }));
  if (mode === 'auto') {
    const seen = new Set(all.map((i) => i.url));
    for (const p of pictures) {
      if (seen.has(p.url)) continue;
      seen.add(p.url);
      const extension = /\.(jpe?g|png|webp|gif|avif)$/i.exec(URL.parse(p.url)?.pathname ?? '')?.[1]?.toLowerCase();
      all.push({
        ...mediaFormat({
          url: p.url,
          kind: 'image',
          container: extension === 'jpeg' ? 'jpg' : (extension ?? null),
          width: p.width,
          height: p.height,
          hasAudio: false,
        }),
        title: p.title,
        cover: null,
        alternatives: [],
      });
    }
  }
  const total = Math.max(all.length, declaredTotal);
  const gallery = total >= 2;
  return {
    media,
    alternatives: first.selection.alternatives.map(plain),
    items: gallery ? all.slice(0, maxItems) : [],
    itemsTotal: gallery ? total : 0,
  };
}
