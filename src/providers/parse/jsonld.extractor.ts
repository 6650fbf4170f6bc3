import { parse as parseDuration, toSeconds } from 'iso8601-duration';
import { attr, text, type HtmlPage } from './html-page.js';
import { mimeOf } from './media-types.js';

/** What a JSON-LD VideoObject or AudioObject says, with URLs still as written. */
export interface JsonLdMedia {
  type: 'VideoObject' | 'AudioObject';
  contentUrl: string | null;
  encodingFormat: string | null;
  width: number | null;
  height: number | null;
  thumbnails: JsonLdImage[];
  name: string | null;
  description: string | null;
  uploadDate: string | null;
  durationSeconds: number | null;
  author: string | null;
}

/** An image named by JSON-LD (thumbnailUrl, thumbnail, ImageObject), URL still as written. */
export interface JsonLdImage {
  url: string;
  width: number | null;
  height: number | null;
}

/** A picture a post presents as one of its items (associatedMedia, hasPart, an ImageGallery). */
export interface JsonLdPicture extends JsonLdImage {
  name: string | null;
}

/** Everything the page's JSON-LD blocks say that the extractor uses. */
export interface JsonLdResult {
  media: JsonLdMedia[];
  images: JsonLdImage[];
  galleryImages: JsonLdPicture[];
}

type Json = Record<string, unknown>;

/** Facts a media object inherits from the object it is nested in (NewsArticle.video has no author of its own). */
interface Inherited {
  author: string | null;
  published: string | null;
  /** Whether the node is content of a post or gallery (reached through associatedMedia or hasPart, or inside an ImageGallery). */
  inGallery: boolean;
  /** The types of the object this one is a property of. */
  parentTypes: string[];
}

/** Properties whose values are the content of a post, not its decoration... */
const CONTENT_KEYS = new Set(['associatedMedia', 'hasPart', 'sharedContent']);
/** ...when the post is one of these, or lists several (an article's one associatedMedia is usually its hero picture). */
const POST_TYPES = new Set([
  'SocialMediaPosting',
  'DiscussionForumPosting',
  'ImageGallery',
  'MediaGallery',
  'Collection',
  'CreativeWorkSeries',
]);
const GALLERY_TYPES = new Set(['ImageGallery', 'MediaGallery']);
/** Properties whose {"@id"} references are followed to the node they name (a post's media, listed elsewhere in the graph). */
const REFERENCE_KEYS = new Set([...CONTENT_KEYS, 'video', 'audio']);

/** Every node that has an @id and says something besides it, across all blocks. */
function indexById(datas: unknown[]): Map<string, Json> {
  const index = new Map<string, Json>();
  const visit = (node: unknown, depth: number): void => {
    if (depth > MAX_DEPTH || node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const n of node) visit(n, depth + 1);
      return;
    }
    const o = node as Json;
    if (typeof o['@id'] === 'string' && o['@type'] !== undefined && !index.has(o['@id'])) index.set(o['@id'], o);
    for (const value of Object.values(o)) visit(value, depth + 1);
  };
  datas.forEach((d) => visit(d, 0));
  return index;
}

const MAX_DEPTH = 16;

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v.trim() : null);

function num(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) && v > 0 ? v : null;
  if (typeof v === 'string') return num(parseFloat(v));
  if (Array.isArray(v)) return num(v[0]);
  if (v && typeof v === 'object') return num((v as Json).value); // QuantitativeValue
  return null;
}

/** Seconds from an ISO-8601 duration such as PT1M30.5S or P0DT1H, or from plain seconds. */
export function isoDurationSeconds(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) && v >= 0 ? v : null;
  const s = str(v);
  if (!s) return null;
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s);
  // A "T" with no time after it is no duration, though the library reads P1DT as a day.
  if (/T$/i.test(s)) return null;
  try {
    return Math.round(toSeconds(parseDuration(s.toUpperCase())) * 1000) / 1000;
  } catch {
    return null; // not an ISO-8601 duration ("P" alone is none either)
  }
}

/** A person's or organisation's name from a string, a Person/Organization, or a list of them. */
function names(v: unknown): string | null {
  if (Array.isArray(v)) return [...new Set(v.map(names).filter((n): n is string => !!n))].join(', ') || null;
  if (typeof v === 'string') return /^https?:\/\//i.test(v.trim()) ? null : str(v);
  if (v && typeof v === 'object') return str((v as Json).name);
  return null;
}

/** Images from a URL string, an ImageObject, or a list of either. */
function images(v: unknown): JsonLdImage[] {
  if (Array.isArray(v)) return v.flatMap(images);
  const url = str(v);
  if (url) return [{ url, width: null, height: null }];
  if (v && typeof v === 'object') {
    const o = v as Json;
    const src = str(o.contentUrl) ?? str(o.url);
    return src ? [{ url: src, width: num(o.width), height: num(o.height) }] : [];
  }
  return [];
}

/** The object's types without a vocabulary prefix ("schema:VideoObject", "https://schema.org/VideoObject"). */
function typesOf(o: Json): string[] {
  const t = o['@type'];
  return (Array.isArray(t) ? t : [t]).filter((x): x is string => typeof x === 'string').map((x) => x.replace(/^.*[/:]/, ''));
}

/** The block's text as JSON; one retry with raw control characters blanked, a common CMS slip. */
function parseBlock(text: string): unknown {
  // Old templates wrap the block in an HTML comment or a CDATA section for ancient browsers.
  const cleaned = text
    .trim()
    .replace(/^(?:<!--|(?:\/\/\s*|\/\*\s*)?<!\[CDATA\[(?:\s*\*\/)?)/, '')
    .replace(/(?:-->|(?:\/\/\s*|\/\*\s*)?\]\]>(?:\s*\*\/)?)$/, '');
  try {
    return JSON.parse(cleaned);
  } catch {
    // Unescaped newlines and tabs inside strings are invalid JSON but harmless to blank out.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what this removes
    return JSON.parse(cleaned.replace(/[\u0000-\u001f]+/g, ' '));
  }
}

/** Every VideoObject, AudioObject and ImageObject in the page's JSON-LD, wherever nested. Broken blocks are skipped. */
export function extractJsonLd(page: HtmlPage): JsonLdResult {
  const result: JsonLdResult = { media: [], images: [], galleryImages: [] };
  const datas: unknown[] = [];
  // Matched by MIME type, not selector, so "application/ld+json; charset=utf-8" and odd casing count too.
  for (const el of page.elements('script')) {
    if (mimeOf(attr(el, 'type')) !== 'application/ld+json') continue;
    try {
      datas.push(parseBlock(text(el)));
    } catch {
      // A malformed block is common; the rest of the page still counts.
    }
  }
  const nodes = indexById(datas);
  const seenMedia = new Set<Json>();
  const seenPictures = new Set<string>();
  const walk = (node: unknown, key: string | null, depth: number, inherited: Inherited): void => {
    if (depth > MAX_DEPTH || node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const n of node) walk(n, key, depth + 1, inherited);
      return;
    }
    let o = node as Json;
    // A post's content is often named by reference ({"@id": …}) to a node elsewhere in the graph.
    if (key !== null && REFERENCE_KEYS.has(key) && typeof o['@id'] === 'string' && o['@type'] === undefined) {
      const target = nodes.get(o['@id']);
      if (!target) return;
      o = target;
    }
    const types = typesOf(o);
    const here: Inherited = {
      author: names(o.author) ?? names(o.creator) ?? inherited.author,
      published: str(o.uploadDate) ?? str(o.datePublished) ?? inherited.published,
      inGallery:
        inherited.inGallery ||
        (key !== null && CONTENT_KEYS.has(key) && inherited.parentTypes.some((t) => POST_TYPES.has(t))) ||
        types.some((t) => GALLERY_TYPES.has(t)),
      parentTypes: types,
    };
    const media = types.find((t) => t === 'VideoObject' || t === 'AudioObject') as JsonLdMedia['type'] | undefined;
    if (media && !seenMedia.has(o)) {
      seenMedia.add(o);
      result.media.push({
        type: media,
        contentUrl: str(o.contentUrl),
        encodingFormat: str(o.encodingFormat) ?? str(o.fileFormat),
        width: num(o.width),
        height: num(o.height),
        thumbnails: [...images(o.thumbnailUrl), ...images(o.thumbnail), ...images(o.image)],
        name: str(o.name) ?? str(o.headline),
        description: str(o.description),
        uploadDate: here.published,
        durationSeconds: isoDurationSeconds(o.duration),
        author: here.author,
      });
    } else if (types.includes('ImageObject') && key !== 'logo' && key !== 'author' && key !== 'creator' && key !== 'publisher') {
      // Logos and portraits are not the media's picture; the rest may serve as its cover.
      result.images.push(...images(o));
      const src = str(o.contentUrl) ?? str(o.url);
      if (here.inGallery && src && !seenPictures.has(src) && seenPictures.add(src))
        result.galleryImages.push({ url: src, width: num(o.width), height: num(o.height), name: str(o.name) ?? str(o.caption) });
    }
    for (const [k, value] of Object.entries(o)) {
      // Publisher and author subtrees hold logos and portraits, never the page's media.
      // A media object's own pictures (thumbnail, image) are its cover, never items of the post.
      // Several media listed as a post's content make it a gallery, whatever kind of post it is.
      const listed = CONTENT_KEYS.has(k) && Array.isArray(value) && value.length >= 2;
      const child = media ? { ...here, inGallery: false } : listed ? { ...here, inGallery: true } : here;
      if (value && typeof value === 'object' && k !== 'publisher' && k !== 'author' && k !== 'creator') walk(value, k, depth + 1, child);
    }
  };
  for (const data of datas) walk(data, null, 0, { author: null, published: null, inGallery: false, parentTypes: [] });
  return result;
}
