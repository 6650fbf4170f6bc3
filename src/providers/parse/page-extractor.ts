import { attr, closest, descendants, HtmlPage, text } from './html-page.js';
import { extractHidden } from './hidden-media.extractor.js';
import { extractJsonLd, type JsonLdMedia } from './jsonld.extractor.js';
import type { Candidate } from './media-candidate.js';
import { extensionOf, heightHint, isGenericType, isPlayerType, mediaTypeOfExtension, mediaTypeOfMime } from './media-types.js';
import { positiveInt, readMetaTags, type MetaTags } from './meta-tags.extractor.js';
import { codecsOfType, streamsOfCodecs } from './codecs.js';
import { mediaFormat, type CoverImage, type MediaFormat, type MediaMetadata } from './parse.types.js';

/** One distinct media on the page (a gallery has several): its formats, and its own title, picture and length. */
export interface ExtractedItem {
  formats: MediaFormat[];
  title: string | null;
  cover: CoverImage | null;
  durationSeconds: number | null;
}

/** A picture the page presents as content of a multi-item post (not a cover, logo or thumbnail). */
export interface ExtractedPicture extends CoverImage {
  title: string | null;
}

/** Everything a page declares about its media: playable formats (no images) by item, pictures, and metadata. */
export interface ExtractedPage {
  /** Every playable format, in page order. */
  formats: MediaFormat[];
  /** The same formats grouped by the media they belong to, in page order. */
  items: ExtractedItem[];
  /** Pictures that are items of a gallery post. */
  pictures: ExtractedPicture[];
  /** Covers and thumbnails, best first. */
  images: CoverImage[];
  metadata: MediaMetadata;
  /**
   * Whether the formats were found only where pages hide media (AMP players, download links,
   * JSON in scripts and data- attributes): each must be read and found to be media before use.
   */
  hidden: boolean;
}

/** The absolute http(s) form of a URL written on the page, or null (javascript:, data:, garbage). */
function resolver(base: string): (raw: string | null | undefined) => string | null {
  return (raw) => {
    if (!raw?.trim()) return null;
    try {
      const url = new URL(raw.trim(), base);
      return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
    } catch {
      return null;
    }
  };
}

/** Where relative URLs point: <base href> resolved against the page, else the page itself. */
function baseOf(page: HtmlPage, pageUrl: string): string {
  const href = page
    .elements('base')
    .map((el) => attr(el, 'href'))
    .find((h) => h !== undefined);
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

/** What makes two URLs the same media in other renditions: the path without extension or quality marks. */
export function mediaStem(url: string): string {
  const path = URL.parse(url)?.pathname.toLowerCase() ?? url;
  return path
    .replace(/\.[a-z0-9]{2,4}$/, '')
    .replace(/[-_.]?(?:4320|2160|1440|1080|720|540|480|360|240|144)p?(?=$|[-_./])/g, '')
    .replace(/[-_.]?(?:hd|sd|uhd|4k|high|low|medium|mobile)$/, '');
}

/** Groups that turn out to name the same media (a shared URL or stem) are merged, keeping the earliest. */
class Groups {
  private readonly parent = new Map<string, string>();
  private readonly order: string[] = [];
  readonly titles = new Map<string, string>();
  readonly covers = new Map<string, CoverImage>();
  readonly durations = new Map<string, number>();

  add(group: string): void {
    if (!this.parent.has(group)) {
      this.parent.set(group, group);
      this.order.push(group);
    }
  }
  find(group: string): string {
    let g = group;
    while (this.parent.get(g) !== g) g = this.parent.get(g)!;
    return g;
  }
  union(a: string, b: string): void {
    const [ra, rb] = [this.find(a), this.find(b)];
    if (ra === rb) return;
    // The group met first keeps its place in the page order.
    const [keep, drop] = this.order.indexOf(ra) < this.order.indexOf(rb) ? [ra, rb] : [rb, ra];
    this.parent.set(drop, keep);
  }
  /** Roots in page order. */
  roots(): string[] {
    return this.order.filter((g) => this.find(g) === g);
  }
  /** The first value any member of the root's set has. */
  pick<T>(map: Map<string, T>, root: string): T | null {
    for (const g of this.order) if (this.find(g) === root && map.has(g)) return map.get(g)!;
    return null;
  }
}

/**
 * Reads what a page declares about its media, as a browser-less crawler can: Open Graph, Twitter
 * player cards, JSON-LD and <video>/<audio>/<source> (and video.js's <video-js>); URLs resolved
 * against <base>, http(s) only, each URL once. Formats are grouped into the distinct media they
 * render (a gallery post has several), so that each can be an item of its own.
 */
export function extractPage(html: string, pageUrl: string): ExtractedPage {
  const page = new HtmlPage(html);
  const abs = resolver(baseOf(page, pageUrl));
  const formats = new Map<string, MediaFormat>();
  const formatGroup = new Map<string, string>();
  const groups = new Groups();
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
    // Sound is known only when the type lists codecs (`video/webm; codecs="vp9, opus"`) or the media is audio.
    const codecs = codecsOfType(c.type);
    const hasAudio = kind === 'audio' ? true : streamsOfCodecs(codecs).hasAudio;
    groups.add(c.group);
    const existing = formats.get(url);
    if (existing) {
      // The same file named twice (og:video and JSON-LD): each source may know what the other does not.
      existing.width ??= width;
      existing.height ??= height;
      existing.container ??= container;
      existing.codecs ??= codecs;
      existing.hasAudio ??= hasAudio;
      groups.union(formatGroup.get(url)!, c.group);
      return;
    }
    formats.set(url, mediaFormat({ url, kind, container, width, height, codecs, hasAudio }));
    formatGroup.set(url, c.group);
  };
  const addImage = (raw: string | null | undefined, width: number | null = null, height: number | null = null): CoverImage | null => {
    const url = abs(raw);
    if (!url) return null;
    const existing = images.get(url);
    if (!existing) {
      const image = { url, width, height };
      images.set(url, image);
      return image;
    }
    existing.width ??= width;
    existing.height ??= height;
    return existing;
  };

  const meta = readMetaTags(page);
  // og:video:secure_url is the same file over https; it wins over the plain URL. Open Graph arrays
  // list renditions of one media or several media: the stem of the path tells them apart.
  for (const v of meta.video) {
    const url = abs(v.secureUrl ?? v.url);
    addFormat({
      url,
      kind: 'video',
      type: v.type,
      width: v.width,
      height: v.height,
      needsEvidence: true,
      group: `og:${url ? mediaStem(url) : ''}`,
    });
  }
  for (const a of meta.audio) {
    const url = abs(a.secureUrl ?? a.url);
    addFormat({ url, kind: 'audio', type: a.type, group: `og:${url ? mediaStem(url) : ''}` });
  }
  for (const i of meta.image) addImage(i.secureUrl ?? i.url, i.width, i.height);

  addFormat({
    url: meta.first('twitter:player:stream'),
    kind: 'video',
    type: meta.first('twitter:player:stream:content_type'),
    width: positiveInt(meta.first('twitter:player:width')),
    height: positiveInt(meta.first('twitter:player:height')),
    group: 'twitter',
  });
  addImage(meta.first('twitter:image', 'twitter:image:src'));

  const ld = extractJsonLd(page);
  ld.media.forEach((item, n) => {
    const format = item.encodingFormat;
    const group = `ld:${n}`;
    addFormat({
      url: item.contentUrl,
      kind: item.type === 'AudioObject' ? 'audio' : 'video',
      // schema.org allows a MIME type or a bare name ("mp4"); the bare name reads like an extension.
      type: format?.includes('/') ? format : null,
      declared: format && !format.includes('/') ? mediaTypeOfExtension(format) : null,
      width: item.width,
      height: item.height,
      group,
    });
    if (item.name) groups.titles.set(group, item.name);
    if (item.durationSeconds) groups.durations.set(group, item.durationSeconds);
    item.thumbnails.forEach((t, i) => {
      const image = addImage(t.url, t.width, t.height);
      if (image && i === 0) groups.covers.set(group, image);
    });
  });
  for (const i of ld.images) addImage(i.url, i.width, i.height);

  page.elements('video', 'audio', 'video-js').forEach((el, n) => {
    const tag = el.name === 'audio' ? 'audio' : 'video';
    const group = `el:${n}`;
    // width and height on the element are its size on the page, not the media's.
    addFormat({ url: attr(el, 'src'), kind: tag, type: attr(el, 'type'), group });
    for (const source of descendants(el, 'source')) {
      const a = (name: string) => attr(source, name);
      addFormat({
        url: a('src'),
        kind: tag,
        type: a('type'),
        width: positiveInt(a('data-width')),
        height: positiveInt(a('data-height')),
        label: a('size') ?? a('res') ?? a('label') ?? a('data-res') ?? a('data-quality') ?? a('data-title'),
        group,
      });
    }
    const figure = closest(el, 'figure');
    const caption = figure ? descendants(figure, 'figcaption')[0] : undefined;
    const title = attr(el, 'title') ?? attr(el, 'aria-label') ?? (caption ? text(caption) : undefined);
    if (title?.trim()) groups.titles.set(group, title.trim().replace(/\s+/g, ' '));
    if (tag === 'video') {
      const poster = addImage(attr(el, 'poster'));
      if (poster) groups.covers.set(group, poster);
    }
  });

  // Media the page names only in AMP players, links or embedded JSON counts when it declares none.
  const hidden = formats.size === 0;
  if (hidden) {
    const found = extractHidden(page);
    for (const c of found.candidates) addFormat(c);
    for (const [group, title] of found.titles) groups.titles.set(group, title);
    for (const [group, poster] of found.posters) {
      const image = addImage(poster);
      if (image) groups.covers.set(group, image);
    }
  }

  // Renditions of one media spread over several declarations (og:video and a <video> naming the same file under another path).
  const byStem = new Map<string, string>();
  for (const [url, group] of formatGroup) {
    const stem = `${formats.get(url)!.kind}:${mediaStem(url)}`;
    const seen = byStem.get(stem);
    if (seen) groups.union(seen, group);
    else byStem.set(stem, group);
  }
  const items: ExtractedItem[] = groups
    .roots()
    .map((root) => ({
      formats: [...formats.values()].filter((f) => groups.find(formatGroup.get(f.url)!) === root),
      title: groups.pick(groups.titles, root),
      cover: groups.pick(groups.covers, root),
      durationSeconds: groups.pick(groups.durations, root),
    }))
    .filter((item) => item.formats.length > 0);
  const pictures = ld.galleryImages.flatMap((p) => {
    const url = abs(p.url);
    return url ? [{ url, width: p.width, height: p.height, title: p.name }] : [];
  });
  return {
    formats: items.flatMap((i) => i.formats),
    items,
    pictures,
    images: [...images.values()],
    metadata: metadataOf(page, meta, ld.media[0], pageUrl),
    hidden: hidden && items.length > 0,
  };
}

/** The document's <title>, whitespace collapsed as a browser shows it. */
function titleOf(page: HtmlPage): string {
  const title = page.first('title');
  return title ? text(title).trim().replace(/\s+/g, ' ') : '';
}

/** Title, author, duration, date, description and site, social tags first, then JSON-LD, then plain HTML. */
function metadataOf(page: HtmlPage, meta: MetaTags, primary: JsonLdMedia | undefined, pageUrl: string): MediaMetadata {
  let host: string | null = null;
  try {
    host = new URL(pageUrl).hostname || null;
  } catch {
    // The caller validated pageUrl; without a host the site is simply unknown.
  }
  // article:author is usually a profile URL, which is not a name.
  const articleAuthor = meta.first('article:author');
  return {
    title: meta.first('og:title', 'twitter:title') ?? primary?.name ?? (titleOf(page) || null),
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
