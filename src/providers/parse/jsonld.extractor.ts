import type { CheerioAPI } from 'cheerio';

/** What a JSON-LD media object says, with URLs still as written. */
export interface JsonLdMedia {
  type: 'VideoObject' | 'AudioObject';
  contentUrl: string | null;
  encodingFormat: string | null;
  width: number | null;
  height: number | null;
  thumbnails: string[];
  name: string | null;
  description: string | null;
  uploadDate: string | null;
  durationSeconds: number | null;
  author: string | null;
}

type Json = Record<string, unknown>;

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v.trim() : null);

function num(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string') {
    const n = parseFloat(v);
    return Number.isFinite(n) ? n : null;
  }
  if (v && typeof v === 'object') return num((v as Json).value); // QuantitativeValue
  return null;
}

/** ISO-8601 durations such as PT1M30.5S or P0DT1H; plain seconds too. */
export function isoDurationSeconds(v: unknown): number | null {
  if (typeof v === 'number') return v;
  const s = str(v);
  if (!s) return null;
  const m = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/i.exec(s);
  if (!m || s === 'P' || /T$/i.test(s)) return /^\d+(\.\d+)?$/.test(s) ? Number(s) : null;
  const [, d, h, min, sec] = m.map((x) => (x ? Number(x) : 0));
  return d * 86400 + h * 3600 + min * 60 + sec;
}

function names(v: unknown): string | null {
  if (Array.isArray(v)) return v.map(names).filter(Boolean).join(', ') || null;
  if (typeof v === 'string') return str(v);
  if (v && typeof v === 'object') return str((v as Json).name);
  return null;
}

function urls(v: unknown): string[] {
  if (Array.isArray(v)) return v.flatMap(urls);
  if (typeof v === 'string') return str(v) ? [v.trim()] : [];
  if (v && typeof v === 'object') return urls((v as Json).contentUrl ?? (v as Json).url);
  return [];
}

function typesOf(o: Json): string[] {
  const t = o['@type'];
  return (Array.isArray(t) ? t : [t]).filter((x): x is string => typeof x === 'string');
}

/** Every VideoObject and AudioObject in the page's JSON-LD, wherever it is nested. Broken blocks are skipped. */
export function extractJsonLd($: CheerioAPI): JsonLdMedia[] {
  const found: JsonLdMedia[] = [];
  const seen = new Set<unknown>();
  const walk = (node: unknown, depth: number): void => {
    if (depth > 8 || node === null || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) return node.forEach((n) => walk(n, depth + 1));
    const o = node as Json;
    const type = typesOf(o).find((t) => t === 'VideoObject' || t === 'AudioObject') as JsonLdMedia['type'] | undefined;
    if (type) {
      found.push({
        type,
        contentUrl: str(o.contentUrl) ?? null,
        encodingFormat: str(o.encodingFormat),
        width: num(o.width),
        height: num(o.height),
        thumbnails: [...urls(o.thumbnailUrl), ...urls(o.thumbnail)],
        name: str(o.name) ?? str(o.headline),
        description: str(o.description),
        uploadDate: str(o.uploadDate) ?? str(o.datePublished),
        durationSeconds: isoDurationSeconds(o.duration),
        author: names(o.author) ?? names(o.creator),
      });
    }
    for (const value of Object.values(o)) if (value && typeof value === 'object') walk(value, depth + 1);
  };
  $('script[type="application/ld+json"]').each((_i, el) => {
    try {
      walk(JSON.parse($(el).text()), 0);
    } catch {
      // A malformed block on a page is common; the rest of the page still counts.
    }
  });
  return found;
}
