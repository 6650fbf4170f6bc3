import { mediaTypeOfExtension, mediaTypeOfMime } from './media-types.js';

/**
 * What reading the JSON a page carries for its scripts may spend, for the whole page: a hostile
 * page (megabytes of nesting, thousands of URLs) costs at most this, then the rest is ignored.
 */
export interface JsonBudget {
  /** Characters of script or attribute text still to scan (the scan is linear, one pass). */
  chars: number;
  /** Values still to visit in parsed JSON. */
  nodes: number;
  /** Media URLs still to keep. */
  found: number;
}

/** One media URL named in embedded JSON, with what its object says about it. */
export interface JsonMedia {
  url: string;
  type: string | null;
  label: string | null;
  width: number | null;
  height: number | null;
  /** The path of the object (or array) that holds it: URLs under one holder are renditions of one media. */
  holder: string;
}

/** Text longer than this is not handed to JSON.parse at all: its strings are scanned instead. */
export const MAX_JSON_TEXT = 512 * 1024;
/** Nesting deeper than this is no player configuration: it is not parsed, only its strings are scanned. */
export const MAX_JSON_DEPTH = 32;

/** Keys whose string value may be a media URL (player configs, Next.js props, app state, schema.org). */
const URL_KEY =
  /^(?:contenturl|embedurl|src|url|file|href|source|uri|link|stream|streamurl|download|downloadurl|mp4|mp3|m4a|webm|hls|hlsurl|dash|dashurl|m3u8|manifest|manifesturl|playlist|video|videourl|videosrc|audio|audiourl|audiosrc|media|mediaurl|enclosure|progressive|playbackurl|fallback)$/;
/** Keys holding lists of URLs or of source objects. */
const LIST_KEY = /^(?:sources|files|urls|renditions|formats|variants|media|mediafiles|streams|tracks|encodings|enclosures)$/;
/** Subtrees that hold other media than the page's own: ads, related clips, previews, pictures. */
const DECOY_KEY =
  /^(?:ads?|adverts?|advertising|adconfig|adtag|adtagurl|adsconfig|ima|vast|preroll|midroll|postroll|bumpers?|sponsors?|companion|related\w*|recommend\w*|upnext|nextup|next(?:video|episode|talk|clip|item)s?|more\w*|previews?|hover\w*|trailers?|promos?|teasers?|thumbnails?|thumbs?|sprites?|storyboards?|posters?|images?|avatars?|logos?|captions?|subtitles?|textTracks)$/i;
const TYPE_KEYS = ['type', 'mimetype', 'mime', 'contenttype', 'encodingformat', 'format'];
const LABEL_KEYS = ['label', 'quality', 'res', 'resolution', 'size', 'qualitylabel', 'name'];

type Json = Record<string, unknown>;

/** A URL-shaped string: http(s), protocol-relative or relative, no white space, not too long. */
function urlShaped(s: string): boolean {
  if (!s || s.length > 2048 || /\s/.test(s)) return false;
  // Another scheme (javascript:, data:, blob:) is never media the gateway may fetch.
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(s)?.[1]?.toLowerCase();
  return scheme === undefined || scheme === 'http' || scheme === 'https';
}

/** The lower-case extension of a URL's path as written (relative or absolute), or null: no URL is parsed for it. */
function extensionOfRaw(s: string): string | null {
  const path = s.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '').split(/[?#]/, 1)[0];
  return /\.([a-z0-9]{2,4})$/i.exec(path)?.[1]?.toLowerCase() ?? null;
}

/** A dot and two to four letters or digits, then the end, a query, a fragment or an escape: what a file name ends with. */
const EXTENSION_LIKE = /\.[a-z0-9]{2,4}(?:$|[?#\\&])/i;

/** Whether a string written on the page names a video or audio file or manifest by its extension. */
export function mediaExtension(s: string): boolean {
  if (!EXTENSION_LIKE.test(s) || !urlShaped(s)) return false;
  const type = mediaTypeOfExtension(extensionOfRaw(s));
  return type !== null && type.kind !== 'image';
}

const lowerKeys = (o: Json): Map<string, unknown> => new Map(Object.entries(o).map(([k, v]) => [k.toLowerCase(), v]));

function pick(keys: Map<string, unknown>, names: string[]): string | null {
  for (const n of names) {
    const v = keys.get(n);
    if (typeof v === 'string' && v.trim()) return v.trim();
    if (typeof v === 'number' && Number.isFinite(v) && v > 0) return String(v);
  }
  return null;
}

const positive = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.round(v) : null);

/**
 * The media URLs a parsed JSON value names: string fields named like URLs (contentUrl, src, url,
 * file, …) whose value ends in a media extension or whose object declares a media type, and
 * strings listed under `sources`-like keys. Subtrees of ads, related clips and pictures are
 * skipped. Walked depth-first in document order, bounded by depth and by the page's budget.
 */
export function mediaInJson(value: unknown, budget: JsonBudget, prefix: string): JsonMedia[] {
  const out: JsonMedia[] = [];
  const walk = (node: unknown, path: string, holder: string, depth: number, listed: boolean): void => {
    if (depth > MAX_JSON_DEPTH || budget.nodes <= 0 || budget.found <= 0) return;
    budget.nodes -= 1;
    if (typeof node === 'string') {
      if (listed && mediaExtension(node)) keep({ url: node, type: null, label: null, width: null, height: null, holder });
      return;
    }
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      // Entries of one list are renditions of one media: they share the list's holder.
      node.forEach((n, i) => walk(n, `${path}[${i}]`, path, depth + 1, listed));
      return;
    }
    const o = node as Json;
    const keys = lowerKeys(o);
    const type = pick(keys, TYPE_KEYS);
    const mediaType = type?.includes('/') ? mediaTypeOfMime(type) : mediaTypeOfExtension(type);
    const typed = mediaType !== null && mediaType.kind !== 'image';
    for (const [key, v] of Object.entries(o)) {
      const k = key.toLowerCase();
      if (DECOY_KEY.test(key)) continue;
      if (typeof v === 'string') {
        if (URL_KEY.test(k) && urlShaped(v) && (typed || mediaExtension(v))) {
          keep({
            url: v,
            type: typed && type?.includes('/') ? type : null,
            label: pick(keys, LABEL_KEYS),
            width: positive(o.width),
            height: positive(o.height),
            holder,
          });
        }
        continue;
      }
      const child = `${path}.${key}`;
      walk(v, child, Array.isArray(v) ? child : holder === path ? child : holder, depth + 1, LIST_KEY.test(k) || URL_KEY.test(k));
    }
  };
  const keep = (m: JsonMedia): void => {
    if (budget.found <= 0) return;
    budget.found -= 1;
    out.push({ ...m, holder: `${prefix}${m.holder}` });
  };
  walk(value, '$', '$', 0, false);
  return out;
}

/** The result of scanning one JS or JSON literal: where it ends, how deep it nests, the media-like strings in it. */
interface Scan {
  /** Index just past the literal's closing bracket, or null when it does not close within the budget. */
  end: number | null;
  depth: number;
  strings: string[];
}

/** A JS string literal's value (`"…"`, `'…'`), escapes decoded; null when it is not well formed. */
function decodeString(raw: string): string | null {
  const body = raw.slice(1, -1);
  const json = raw[0] === '"' ? raw : `"${body.replace(/\\'/g, "'").replace(/"/g, '\\"')}"`;
  try {
    return JSON.parse(json) as string;
  } catch {
    return null;
  }
}

/**
 * One linear pass over a JS or JSON literal starting at `start` (`{` or `[`): brackets counted
 * outside strings and comments, strings that name media kept. Stops at the literal's end, or when
 * the budget's characters run out.
 */
export function scanLiteral(text: string, start: number, budget: JsonBudget): Scan {
  const scan: Scan = { end: null, depth: 0, strings: [] };
  let depth = 0;
  let i = start;
  const limit = Math.min(text.length, start + Math.max(0, budget.chars));
  while (i < limit) {
    const c = text[i];
    if (c === '"' || c === "'" || c === '`') {
      let j = i + 1;
      while (j < limit && text[j] !== c) j += text[j] === '\\' ? 2 : 1;
      if (j >= limit) break;
      // Only a string with a file extension in it can name media: the rest are not decoded.
      if (c !== '`' && j - i < 2050 && scan.strings.length < budget.found && EXTENSION_LIKE.test(text.slice(i + 1, j))) {
        const value = decodeString(text.slice(i, j + 1));
        if (value && mediaExtension(value)) scan.strings.push(value);
      }
      i = j + 1;
      continue;
    }
    // Comments of a JS literal: an apostrophe in "// don't" starts no string.
    if (c === '/' && text[i + 1] === '*') {
      const close = text.indexOf('*/', i + 2);
      i = close < 0 ? limit : close + 2;
      continue;
    }
    if (c === '/' && text[i + 1] === '/') {
      const close = text.indexOf('\n', i + 2);
      i = close < 0 ? limit : close + 1;
      continue;
    }
    if (c === '{' || c === '[') {
      depth += 1;
      if (depth > scan.depth) scan.depth = depth;
    } else if (c === '}' || c === ']') {
      depth -= 1;
      if (depth === 0) {
        scan.end = i + 1;
        break;
      }
    }
    i += 1;
  }
  budget.chars -= Math.min(i, limit) - start;
  return scan;
}

/**
 * The media a JSON or JS literal at `start` names: parsed with JSON.parse when it is JSON within
 * the size and depth bounds (so each URL comes with its object's type and label), else the
 * media-like strings the scan met (a JS object with unquoted keys, or a hostile nest).
 */
export function mediaInLiteral(text: string, start: number, budget: JsonBudget, prefix: string): JsonMedia[] {
  const scan = scanLiteral(text, start, budget);
  if (scan.end !== null && scan.depth <= MAX_JSON_DEPTH && scan.end - start <= MAX_JSON_TEXT) {
    let parsed: unknown;
    let ok = true;
    try {
      parsed = JSON.parse(text.slice(start, scan.end));
    } catch {
      ok = false;
    }
    if (ok) return mediaInJson(parsed, budget, prefix);
  }
  const strings = [...new Set(scan.strings)].slice(0, Math.max(0, budget.found));
  budget.found -= strings.length;
  // Without the structure, nothing says which strings are renditions of one media: each stands alone.
  return strings.map((url, i) => ({ url, type: null, label: null, width: null, height: null, holder: `${prefix}$#${i}` }));
}

/** Where script text assigns a literal to a global or variable: `window.__INITIAL_STATE__ = {`, `var config = [`. */
const ASSIGNMENT =
  /(?:\b(?:window|self|globalThis)\s*(?:\.\s*[\w$]+|\[\s*["'][\w$]+["']\s*\])|\b(?:var|let|const)\s+[\w$]+)\s*=\s*(JSON\.parse\(\s*)?(?=[{["'])/g;
/** Literals read per script at most: a script assigning thousands is hostile, and the first ones are the state. */
const MAX_ASSIGNMENTS = 8;
/** Characters of one script searched for assignments: app state is assigned near the top. */
const MAX_SCRIPT_SEARCH = 1024 * 1024;

/** The media a script's text names: the whole text when it is JSON, else the literals it assigns to globals. */
export function mediaInScript(text: string, isJson: boolean, budget: JsonBudget, prefix: string): JsonMedia[] {
  const trimmed = text
    .slice(0, isJson ? text.length : MAX_SCRIPT_SEARCH)
    .trim()
    .replace(/^(?:<!--|(?:\/\/\s*|\/\*\s*)?<!\[CDATA\[(?:\s*\*\/)?)/, '')
    .trimStart();
  if (isJson) {
    const start = trimmed.search(/[{[]/);
    return start === 0 ? mediaInLiteral(trimmed, 0, budget, prefix) : [];
  }
  const found: JsonMedia[] = [];
  ASSIGNMENT.lastIndex = 0;
  let n = 0;
  for (let m = ASSIGNMENT.exec(trimmed); m && n < MAX_ASSIGNMENTS && budget.chars > 0; m = ASSIGNMENT.exec(trimmed)) {
    n += 1;
    const at = m.index + m[0].length;
    if (m[1] && (trimmed[at] === '"' || trimmed[at] === "'")) {
      // JSON.parse('…'): the state is a string literal holding JSON.
      const close = stringEnd(trimmed, at, budget.chars);
      const inner = close === null ? null : decodeString(trimmed.slice(at, close + 1));
      if (inner && /^\s*[{[]/.test(inner)) found.push(...mediaInLiteral(inner, inner.search(/[{[]/), budget, `${prefix}${n}:`));
      continue;
    }
    if (trimmed[at] !== '{' && trimmed[at] !== '[') continue;
    found.push(...mediaInLiteral(trimmed, at, budget, `${prefix}${n}:`));
  }
  return found;
}

/** The index of the quote closing the string literal that opens at `at`, within `max` characters, or null. */
function stringEnd(text: string, at: number, max: number): number | null {
  const quote = text[at];
  const limit = Math.min(text.length, at + max);
  for (let j = at + 1; j < limit; j += text[j] === '\\' ? 2 : 1) if (text[j] === quote) return j;
  return null;
}
