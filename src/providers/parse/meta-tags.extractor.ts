import { attr, type HtmlPage } from './html-page.js';

/** One Open Graph object (og:video, og:audio, og:image) with its structured properties, URLs as written. */
export interface OgObject {
  url: string | null;
  secureUrl: string | null;
  type: string | null;
  width: number | null;
  height: number | null;
}

/** The page's <meta> tags: a lookup by name and the Open Graph objects in document order. */
export interface MetaTags {
  /** The first non-empty value among the keys, tried in order. */
  first(...keys: string[]): string | null;
  video: OgObject[];
  audio: OgObject[];
  image: OgObject[];
}

const OG_OBJECT = /^og:(video|audio|image)(?::(url|secure_url|type|width|height))?$/;

/** A positive integer from an attribute value such as "720" or "720px"; null otherwise. */
export function positiveInt(v: string | null | undefined): number | null {
  const n = parseInt(v ?? '', 10);
  return Number.isFinite(n) && n > 0 ? n : null;
}

/** Reads every <meta> tag once, keyed by `property` or `name` (sites use either for OG and Twitter). */
export function readMetaTags(page: HtmlPage): MetaTags {
  const entries: Array<[string, string]> = [];
  for (const el of page.elements('meta')) {
    const key = (attr(el, 'property') ?? attr(el, 'name') ?? '').trim().toLowerCase();
    // Early Twitter cards documented `value`; some templates still write it.
    const content = attr(el, 'content') ?? attr(el, 'value');
    if (key && content !== undefined) entries.push([key, content.trim()]);
  }

  const tags: MetaTags = {
    first(...keys) {
      for (const k of keys) {
        const hit = entries.find(([mk, v]) => mk === k && v);
        if (hit) return hit[1];
      }
      return null;
    },
    video: [],
    audio: [],
    image: [],
  };

  // Structured properties (og:video:type, :width, ...) belong to the root tag before them, per ogp.me.
  for (const [key, value] of entries) {
    const m = OG_OBJECT.exec(key);
    if (!m || !value) continue;
    const list = tags[m[1] as 'video' | 'audio' | 'image'];
    const prop = m[2] ?? 'url';
    let current = list.at(-1);
    // A root starts a new object, unless it repeats (og:video then og:video:url) or fills one opened by
    // a structured property written first (some sites give only og:video:secure_url and :type).
    const startsNew = prop === 'url' && current !== undefined && current.url !== null && current.url !== value;
    if (!current || startsNew) {
      current = { url: null, secureUrl: null, type: null, width: null, height: null };
      list.push(current);
    }
    if (prop === 'url') current.url = value;
    else if (prop === 'secure_url') current.secureUrl ??= value;
    else if (prop === 'type') current.type ??= value;
    else if (prop === 'width') current.width ??= positiveInt(value);
    else current.height ??= positiveInt(value);
  }
  return tags;
}
