import iconv from 'iconv-lite';
import { ProviderError } from '../../errors.js';
import { FetchError } from '../../net/fetch-error.js';
import type { GuardedHttpClient } from '../../net/guarded-client.js';
import { classifyDirectMedia } from './direct-media.js';
import { selectFormat } from './format-selection.js';
import { extractPage } from './page-extractor.js';
import type { ParseProvider, ParseRequest, ParseResult } from './parse.types.js';

export interface BuiltinOptions {
  client: GuardedHttpClient;
  /** Largest page read, in bytes. */
  pageMaxBytes: number;
}

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

/**
 * The pure-Node provider: reads the page through the guarded client and takes what the page itself
 * declares (Open Graph, Twitter cards, JSON-LD, <video>/<audio>), or the URL itself when it is media.
 */
export class BuiltinParseProvider implements ParseProvider {
  readonly name = 'builtin';

  constructor(private readonly options: BuiltinOptions) {}

  async parse(request: ParseRequest): Promise<ParseResult> {
    const { client } = this.options;
    // One GET: a page's body is read; a direct media link is recognised from its headers and its body left unread.
    const page = await this.call(() =>
      client.request(request.url, {
        signal: request.signal,
        maxBytes: this.options.pageMaxBytes,
        headers: { accept: BROWSER_ACCEPT },
        wantBody: (url, headers) => !classifyDirectMedia(headers['content-type'] ?? null, url),
      }),
    );
    const direct = classifyDirectMedia(page.headers['content-type'] ?? null, page.url);
    if (direct) {
      if (direct.kind === 'image') throw new ProviderError(this.name, 'no_media', 'The URL is an image, not video or audio.');
      return {
        ...selectFormat(this.name, [direct], request.mode, request.quality),
        items: [],
        cover: null,
        metadata: { title: null, author: null, durationSeconds: null, publishedAt: null, description: null, site: new URL(page.url).hostname },
      };
    }
    const contentType = page.headers['content-type'] ?? '';
    if (!/html|xml/i.test(contentType) && contentType !== '') {
      throw new ProviderError(this.name, 'no_media', 'The URL is neither a web page nor media.');
    }
    const extracted = extractPage(decodeHtml(page.body, contentType), page.url);
    const playable = extracted.formats.filter((f) => f.kind !== 'image');
    if (playable.length === 0) throw new ProviderError(this.name, 'no_media', 'The page declares no video or audio.');
    const { media, alternatives } = selectFormat(this.name, playable, request.mode, request.quality);
    return {
      media,
      alternatives,
      items: [],
      cover: extracted.images[0] ?? null,
      metadata: extracted.metadata,
    };
  }

  /** Maps the client's failures onto what they mean for the caller; URL_NOT_ALLOWED passes through. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof FetchError)) throw err;
      if (err.kind === 'timeout') throw new ProviderError(this.name, 'timeout', err.message, { cause: err });
      if (err.kind === 'http_status' && (err.status === 404 || err.status === 410)) {
        throw new ProviderError(this.name, 'unavailable_content', `The page answered ${err.status}.`, { cause: err });
      }
      if (err.kind === 'http_status' && (err.status === 401 || err.status === 403 || err.status === 451)) {
        throw new ProviderError(this.name, 'unavailable_content', `The page answered ${err.status}.`, { cause: err });
      }
      if (err.kind === 'too_large') throw new ProviderError(this.name, 'no_media', 'The page is larger than the parser reads.', { cause: err });
      throw new ProviderError(this.name, 'failed', err.message, { cause: err });
    }
  }
}

/** The page's text in its declared charset (header, then <meta charset>), UTF-8 when unsaid or unknown. */
export function decodeHtml(body: Buffer, contentType: string): string {
  const head = body.subarray(0, 2048).toString('latin1');
  const charset =
    /charset\s*=\s*["']?([\w.:-]+)/i.exec(contentType)?.[1] ??
    /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1] ??
    'utf-8';
  return iconv.decode(body, iconv.encodingExists(charset) ? charset : 'utf-8');
}
