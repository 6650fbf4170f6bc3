import type { Element } from 'domhandler';
import { mediaExtension, mediaInScript, type JsonBudget, type JsonMedia } from './embedded-json.reader.js';
import { attr, descendants, text, type HtmlPage } from './html-page.js';
import type { Candidate } from './media-candidate.js';
import { extensionOf, mediaTypeOfExtension, mediaTypeOfMime, mimeOf } from './media-types.js';

/**
 * What reading a page's hidden media may spend, whatever the page: characters of script and
 * attribute JSON scanned, JSON values visited, and URLs kept (links, AMP sources and JSON alike).
 */
export const HIDDEN_LIMITS = { chars: 2 * 1024 * 1024, nodes: 50_000, found: 32 } as const;

/** Media a page names outside its players and social tags, in the order it is trusted. */
export interface HiddenMedia {
  candidates: Candidate[];
  /** A group's own title (an AMP player's title), by group. */
  titles: Map<string, string>;
  /** A group's poster (an AMP video's), URL as written, by group. */
  posters: Map<string, string>;
}

/** data-* attributes that hold one media URL as plain text. */
const URL_ATTRIBUTE = /^data-(?:video|audio|src|file|url|mp4|mp3|m4a|stream|hls|dash|media|download)(?:-?(?:url|src|file))?$/;
/** Script types that hold JSON data (app state, JSON-LD); the JSON-LD reader has taken what it knows of the latter. */
const JSON_SCRIPT = /^application\/(?:[\w.-]+\+)?json$/;
/** Script types that hold JavaScript. */
const JS_SCRIPT = /^(?:|module|(?:text|application)\/(?:x-)?(?:javascript|ecmascript))$/;

/** The kind a URL's declared type or extension says: audio for audio files, video for the rest. */
function kindOf(url: string, type: string | null | undefined): 'video' | 'audio' {
  const byMime = mediaTypeOfMime(type);
  if (byMime) return byMime.kind === 'audio' ? 'audio' : 'video';
  let ext: string | null = null;
  try {
    ext = extensionOf(new URL(url, 'http://x/').href);
  } catch {
    ext = null;
  }
  return mediaTypeOfExtension(ext)?.kind === 'audio' ? 'audio' : 'video';
}

/** Whether a declared type names video or audio (not a picture, page or byte stream). */
const mediaMime = (type: string | null | undefined): boolean => {
  const t = mediaTypeOfMime(type);
  return t !== null && t.kind !== 'image';
};

const fromJson = (m: JsonMedia, group: string): Candidate => ({
  url: m.url,
  kind: kindOf(m.url, m.type),
  type: m.type,
  width: m.width,
  height: m.height,
  label: m.label,
  group: `${group}:${m.holder}`,
});

/**
 * Media named only where a crawler does not usually look, read when the page declares none in
 * its players, Open Graph, Twitter cards or JSON-LD: AMP players (`<amp-video>`, `<amp-audio>`,
 * an `<amp-story>`'s pages and background audio), then links to media files (marked as downloads
 * first), then JSON in `data-` attributes (video.js `data-setup`, `data-config`, `data-video`),
 * then JSON in scripts (`__NEXT_DATA__`, `window.__INITIAL_STATE__ = {…}`, `application/json`).
 * All of it within `HIDDEN_LIMITS`; URLs as written, to be checked by reading them.
 */
export function extractHidden(page: HtmlPage): HiddenMedia {
  const found: HiddenMedia = { candidates: [], titles: new Map(), posters: new Map() };
  const budget: JsonBudget = { ...HIDDEN_LIMITS };
  const room = () => HIDDEN_LIMITS.found - found.candidates.length;
  const push = (c: Candidate): void => {
    if (c.url && room() > 0) found.candidates.push(c);
  };
  /** The JSON readers keep no more URLs than there is room for. */
  const json = (text: string, isJson: boolean): JsonMedia[] => {
    budget.found = room();
    return mediaInScript(text, isJson, budget, '');
  };

  page.elements('amp-video', 'amp-audio').forEach((el, n) => {
    const kind = el.name === 'amp-audio' ? 'audio' : 'video';
    const group = `amp:${n}`;
    push({ url: attr(el, 'src'), kind, type: attr(el, 'type'), group });
    for (const source of descendants(el, 'source')) {
      const a = (name: string) => attr(source, name);
      push({ url: a('src'), kind, type: a('type'), label: a('data-res') ?? a('label') ?? a('size') ?? a('media'), group });
    }
    const title = attr(el, 'title') ?? attr(el, 'aria-label');
    if (title?.trim()) found.titles.set(group, title.trim());
    const poster = attr(el, 'poster');
    if (poster) found.posters.set(group, poster);
  });
  page.elements('amp-story', 'amp-story-page').forEach((el, n) => {
    const audio = attr(el, 'background-audio');
    if (audio) push({ url: audio, kind: 'audio', group: `amp-audio:${n}` });
  });

  // Links marked as downloads ("Download episode", <a download>) come before other links to media files.
  const marked: Candidate[] = [];
  const plain: Candidate[] = [];
  page.elements('a').forEach((el, n) => {
    // Once the marked links fill the room, no later link can take a place.
    if (marked.length >= room()) return;
    const href = attr(el, 'href')?.trim();
    const type = attr(el, 'type');
    if (!href || !(mediaMime(type) || (mediaExtension(href) && !mimeOf(type)))) return;
    const words = [attr(el, 'title'), attr(el, 'aria-label'), attr(el, 'class'), text(el)].join(' ');
    const list = attr(el, 'download') !== undefined || /download/i.test(words) ? marked : plain;
    if (list === marked || marked.length + plain.length < room())
      list.push({ url: href, kind: kindOf(href, type), type: mediaMime(type) ? type : null, label: words, group: `link:${n}` });
  });
  for (const c of [...marked, ...plain]) push(c);

  page.all().forEach((el, n) => {
    for (const [name, value] of Object.entries(el.attribs)) {
      if (!name.startsWith('data-') || room() <= 0 || budget.chars <= 0) continue;
      const v = value.trim();
      if (v.startsWith('{') || v.startsWith('[')) {
        for (const m of json(v, true)) push(fromJson(m, `data:${n}:${name}`));
      } else if (URL_ATTRIBUTE.test(name) && mediaExtension(v)) {
        push({ url: v, kind: kindOf(v, null), group: `data:${n}:${name}` });
      }
    }
  });

  page.elements('script').forEach((el: Element, n) => {
    if (attr(el, 'src') !== undefined || room() <= 0 || budget.chars <= 0) return;
    const type = mimeOf(attr(el, 'type'));
    const isJson = JSON_SCRIPT.test(type);
    if (!isJson && !JS_SCRIPT.test(type)) return;
    for (const m of json(text(el), isJson)) push(fromJson(m, `script:${n}`));
  });
  return found;
}
