import * as cheerio from 'cheerio';
import { extractJsonLd } from './jsonld.extractor.js';
import { heightHint, mediaTypeOf } from './media-types.js';
import type { CoverImage, MediaFormat, MediaKind, MediaMetadata } from './parse.types.js';

/** Everything a page declares about its media. */
export interface ExtractedPage {
  formats: MediaFormat[];
  images: CoverImage[];
  metadata: MediaMetadata;
}

interface Structured {
  url: string | null;
  secureUrl: string | null;
  type: string | null;
  width: number | null;
  height: number | null;
}

const PLAYER_TYPES = new Set(['text/html', 'application/x-shockwave-flash']);
const int = (v: string | undefined | null): number | null => {
  const n = parseInt(v ?? '', 10);
  return Number.isFinite(n) && n > 0 ? n : null;
};

/**
 * Reads a page the way a browser-less crawler can: Open Graph, Twitter player cards, JSON-LD
 * VideoObject/AudioObject, and <video>/<audio>/<source> tags, resolving URLs against <base>.
 */
export function extractPage(html: string, pageUrl: string): ExtractedPage {
  const $ = cheerio.load(html);
  let base = pageUrl;
  const baseHref = $('base[href]').first().attr('href');
  if (baseHref) {
    try {
      base = new URL(baseHref, pageUrl).href;
    } catch {
      // An unusable <base> is ignored, as browsers do.
    }
  }
  const abs = (u: string | null | undefined): string | null => {
    if (!u || !u.trim()) return null;
    try {
      const url = new URL(u.trim(), base);
      return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
    } catch {
      return null;
    }
  };

  const formats = new Map<string, MediaFormat>();
  const images = new Map<string, CoverImage>();
  const addFormat = (rawUrl: string | null, opts: { type?: string | null; kind?: MediaKind; width?: number | null; height?: number | null; label?: string | null }) => {
    const url = abs(rawUrl);
    if (!url || (opts.type && PLAYER_TYPES.has(opts.type.toLowerCase()))) return;
    const detected = mediaTypeOf(opts.type ?? null, url);
    const kind = detected?.kind ?? opts.kind;
    if (!kind || kind === 'image') return;
    const height = opts.height ?? heightHint(opts.label) ?? heightHint(new URL(url).pathname);
    const existing = formats.get(url);
    if (existing) {
      existing.width ??= opts.width ?? null;
      existing.height ??= height;
      existing.container ??= detected?.container ?? null;
      return;
    }
    formats.set(url, {
      url,
      kind,
      container: detected?.container ?? null,
      width: opts.width ?? null,
      height,
      hasAudio: true,
      hasVideo: kind === 'video',
      expiresAt: null,
      headers: null,
    });
  };
  const addImage = (rawUrl: string | null | undefined, width: number | null = null, height: number | null = null) => {
    const url = abs(rawUrl);
    if (url && !images.has(url)) images.set(url, { url, width, height });
  };

  // Meta tags in document order: structured Open Graph properties attach to the object before them.
  const meta: Array<[string, string]> = [];
  $('meta').each((_i, el) => {
    const key = ($(el).attr('property') ?? $(el).attr('name') ?? '').trim().toLowerCase();
    const content = $(el).attr('content');
    if (key && content !== undefined) meta.push([key, content.trim()]);
  });
  const first = (...keys: string[]) => {
    for (const k of keys) {
      const hit = meta.find(([mk, v]) => mk === k && v);
      if (hit) return hit[1];
    }
    return null;
  };

  const groups: Record<'video' | 'audio' | 'image', Structured[]> = { video: [], audio: [], image: [] };
  for (const [key, value] of meta) {
    const m = /^og:(video|audio|image)(?::(url|secure_url|type|width|height))?$/.exec(key);
    if (!m) continue;
    const list = groups[m[1] as 'video' | 'audio' | 'image'];
    const prop = m[2] ?? 'url';
    let current = list.at(-1);
    if (prop === 'url' && (!current || (current.url !== null && current.url !== value))) {
      current = { url: null, secureUrl: null, type: null, width: null, height: null };
      list.push(current);
    }
    if (!current) continue;
    if (prop === 'url') current.url = value;
    else if (prop === 'secure_url') current.secureUrl = value;
    else if (prop === 'type') current.type = value;
    else if (prop === 'width') current.width = int(value);
    else current.height = int(value);
  }
  for (const v of groups.video) addFormat(v.secureUrl ?? v.url, { type: v.type, kind: 'video', width: v.width, height: v.height });
  for (const a of groups.audio) addFormat(a.secureUrl ?? a.url, { type: a.type, kind: 'audio' });
  for (const i of groups.image) addImage(i.secureUrl ?? i.url, i.width, i.height);

  addFormat(first('twitter:player:stream'), {
    type: first('twitter:player:stream:content_type'),
    kind: 'video',
    width: int(first('twitter:player:width')),
    height: int(first('twitter:player:height')),
  });

  const ld = extractJsonLd($);
  for (const item of ld) {
    addFormat(item.contentUrl, { type: item.encodingFormat?.includes('/') ? item.encodingFormat : null, kind: item.type === 'AudioObject' ? 'audio' : 'video', width: item.width, height: item.height });
    item.thumbnails.forEach((t) => addImage(t));
  }

  $('video, audio').each((_i, el) => {
    const tag = el.tagName.toLowerCase() as 'video' | 'audio';
    const width = int($(el).attr('width'));
    const height = int($(el).attr('height'));
    addFormat($(el).attr('src') ?? null, { type: $(el).attr('type') ?? null, kind: tag, width, height: tag === 'video' ? height : null });
    $(el)
      .find('source')
      .each((_j, src) => {
        const label = $(src).attr('size') ?? $(src).attr('res') ?? $(src).attr('label') ?? $(src).attr('data-quality') ?? null;
        addFormat($(src).attr('src') ?? null, { type: $(src).attr('type') ?? null, kind: tag, height: heightHint(label), label });
      });
    if (tag === 'video') addImage($(el).attr('poster'));
  });
  addImage(first('twitter:image', 'twitter:image:src'));

  const primary = ld[0];
  let host = '';
  try {
    host = new URL(pageUrl).hostname;
  } catch {
    // pageUrl was checked by the caller; an empty site is the honest fallback.
  }
  const ogDuration = Number(first('video:duration', 'og:video:duration'));
  return {
    formats: [...formats.values()],
    images: [...images.values()],
    metadata: {
      title: first('og:title', 'twitter:title') ?? primary?.name ?? ($('title').first().text().trim() || null),
      author: primary?.author ?? first('author', 'article:author', 'twitter:creator'),
      durationSeconds: primary?.durationSeconds ?? (Number.isFinite(ogDuration) && ogDuration > 0 ? ogDuration : null),
      publishedAt: primary?.uploadDate ?? first('article:published_time', 'og:video:release_date', 'video:release_date'),
      description: first('og:description', 'twitter:description', 'description') ?? primary?.description ?? null,
      site: first('og:site_name') ?? (host || null),
    },
  };
}
