import * as cheerio from 'cheerio';
import { extractJsonLd, type JsonLdMedia } from './jsonld.extractor.js';
import { extensionOf, heightHint, isGenericType, isPlayerType, mediaTypeOfExtension, mediaTypeOfMime, type MediaType } from './media-types.js';
import { positiveInt, readMetaTags, type MetaTags } from './meta-tags.extractor.js';
import type { CoverImage, MediaFormat, MediaMetadata } from './parse.types.js';

/** Everything a page declares about its media: playable formats (no images), pictures, and metadata. */
export interface ExtractedPage {
  formats: MediaFormat[];
  images: CoverImage[];
  metadata: MediaMetadata;
}

/** One place on the page that names a media URL, with what the page says about it. */
interface Candidate {
  url: string | null | undefined;
  /** The kind the context implies (og:audio, AudioObject, <audio>); a declared MIME type overrules it. */
  kind: 'video' | 'audio';
  type?: string | null;
  width?: number | null;
  height?: number | null;
  /** A quality label such as "720p" (the `size`, `res` or `label` attribute of <source>). */
  label?: string | null;
  /** A container named without a MIME type (JSON-LD encodingFormat "mp4"); it outranks the URL's extension. */
  declared?: MediaType | null;
  /** og:video without a type is usually an embed page, so it counts only with a media type or extension. */
  needsEvidence?: boolean;
}

/** The absolute http(s) form of a URL written on the page, or null (javascript:, data:, garbage). */
function resolver(base: string): (raw: string | null | undefined) => string | null {
  return (raw) => {
    if (!raw || !raw.trim()) return null;
    try {
      const url = new URL(raw.trim(), base);
      return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
    } catch {
      return null;
    }
  };
}

/** Where relative URLs point: <base href> resolved against the page, else the page itself. */
function baseOf($: cheerio.CheerioAPI, pageUrl: string): string {
  const href = $('base[href]').first().attr('href');
  if (href) {
    try {
      return new URL(href.trim(), pageUrl).href;
    } catch {
      // An unusable <base> is ignored, as browsers do.
    }
  }
  return pageUrl;
}

/** Positive seconds from a number written as text (og video:duration), else null. */
function seconds(text: string | null): number | null {
  const n = Number(text ?? '');
  return text && Number.isFinite(n) && n > 0 ? n : null;
}

/**
 * Reads what a page declares about its media, as a browser-less crawler can: Open Graph, Twitter
 * player cards, JSON-LD and <video>/<audio>/<source>; URLs resolved against <base>, http(s) only,
 * each URL once.
 */
export function extractPage(html: string, pageUrl: string): ExtractedPage {
  const $ = cheerio.load(html);
  const abs = resolver(baseOf($, pageUrl));
  const formats = new Map<string, MediaFormat>();
  const images = new Map<string, CoverImage>();

  const addFormat = (c: Candidate): void => {
    const url = abs(c.url);
    if (!url || isPlayerType(c.type)) return;
    const byMime = mediaTypeOfMime(c.type);
    // A declared type that is neither media nor generic (text/plain, application/json) is not media.
    if (!byMime && !isGenericType(c.type)) return;
    const byExt = c.declared ?? mediaTypeOfExtension(extensionOf(url));
    if (byMime?.kind === 'image' || (!byMime && byExt?.kind === 'image')) return;
    if (c.needsEvidence && !byMime && !byExt) return;
    const kind = byMime?.kind === 'audio' || byMime?.kind === 'video' ? byMime.kind : c.kind;
    let container = byMime?.container ?? byExt?.container ?? null;
    if (kind === 'audio' && container === 'mp4') container = 'm4a'; // an .mp4 in an audio context is M4A
    // Audio has no picture size, so sizes and height hints apply to video only.
    const height = kind === 'video' ? (c.height ?? heightHint(c.label) ?? heightHint(new URL(url).pathname)) : null;
    const width = kind === 'video' ? (c.width ?? null) : null;
    const existing = formats.get(url);
    if (existing) {
      // The same file named twice (og:video and JSON-LD): each source may know what the other does not.
      existing.width ??= width;
      existing.height ??= height;
      existing.container ??= container;
      return;
    }
    formats.set(url, { url, kind, container, width, height, hasAudio: true, hasVideo: kind === 'video', expiresAt: null, headers: null });
  };
  const addImage = (raw: string | null | undefined, width: number | null = null, height: number | null = null): void => {
    const url = abs(raw);
    if (!url) return;
    const existing = images.get(url);
    if (!existing) images.set(url, { url, width, height });
    else {
      existing.width ??= width;
      existing.height ??= height;
    }
  };

  const meta = readMetaTags($);
  // og:video:secure_url is the same file over https; it wins over the plain URL.
  for (const v of meta.video) addFormat({ url: v.secureUrl ?? v.url, kind: 'video', type: v.type, width: v.width, height: v.height, needsEvidence: true });
  for (const a of meta.audio) addFormat({ url: a.secureUrl ?? a.url, kind: 'audio', type: a.type });
  for (const i of meta.image) addImage(i.secureUrl ?? i.url, i.width, i.height);

  addFormat({
    url: meta.first('twitter:player:stream'),
    kind: 'video',
    type: meta.first('twitter:player:stream:content_type'),
    width: positiveInt(meta.first('twitter:player:width')),
    height: positiveInt(meta.first('twitter:player:height')),
  });
  addImage(meta.first('twitter:image', 'twitter:image:src'));

  const ld = extractJsonLd($);
  for (const item of ld.media) {
    const format = item.encodingFormat;
    addFormat({
      url: item.contentUrl,
      kind: item.type === 'AudioObject' ? 'audio' : 'video',
      // schema.org allows a MIME type or a bare name ("mp4"); the bare name reads like an extension.
      type: format?.includes('/') ? format : null,
      declared: format && !format.includes('/') ? mediaTypeOfExtension(format) : null,
      width: item.width,
      height: item.height,
    });
    for (const t of item.thumbnails) addImage(t.url, t.width, t.height);
  }
  for (const i of ld.images) addImage(i.url, i.width, i.height);

  $('video, audio').each((_i, el) => {
    const node = $(el);
    const tag = el.tagName.toLowerCase() === 'audio' ? 'audio' : 'video';
    const width = positiveInt(node.attr('width'));
    const height = positiveInt(node.attr('height'));
    addFormat({ url: node.attr('src'), kind: tag, type: node.attr('type'), width, height });
    node.find('source').each((_j, source) => {
      const s = $(source);
      addFormat({ url: s.attr('src'), kind: tag, type: s.attr('type'), label: s.attr('size') ?? s.attr('res') ?? s.attr('label') });
    });
    if (tag === 'video') addImage(node.attr('poster'));
  });

  return { formats: [...formats.values()], images: [...images.values()], metadata: metadataOf($, meta, ld.media[0], pageUrl) };
}

/** Title, author, duration, date, description and site, social tags first, then JSON-LD, then plain HTML. */
function metadataOf(
  $: cheerio.CheerioAPI,
  meta: MetaTags,
  primary: JsonLdMedia | undefined,
  pageUrl: string,
): MediaMetadata {
  let host: string | null = null;
  try {
    host = new URL(pageUrl).hostname || null;
  } catch {
    // The caller validated pageUrl; without a host the site is simply unknown.
  }
  // article:author is usually a profile URL, which is not a name.
  const articleAuthor = meta.first('article:author');
  return {
    title: meta.first('og:title', 'twitter:title') ?? primary?.name ?? ($('title').first().text().trim() || null),
    author:
      primary?.author ??
      meta.first('author', 'twitter:creator') ??
      (articleAuthor && !/^https?:\/\//i.test(articleAuthor) ? articleAuthor : null),
    durationSeconds: primary?.durationSeconds ?? seconds(meta.first('video:duration', 'og:video:duration')),
    publishedAt: primary?.uploadDate ?? meta.first('article:published_time', 'video:release_date', 'og:video:release_date'),
    description: meta.first('og:description', 'twitter:description', 'description') ?? primary?.description ?? null,
    site: meta.first('og:site_name') ?? host,
  };
}
