import iconv from 'iconv-lite';
import { AppError, ProviderError } from '../../errors.js';
import { FetchError, failureReason } from '../../net/fetch-error.js';
import type { GuardedHttpClient } from '../../net/guarded-client.js';
import { classifyDirectMedia } from './direct-media.js';
import { rankByQuality } from './format-selection.js';
import { buildMedia, chooseItems, type ItemSource, type PictureSource } from './item-assembly.js';
import { ManifestError, manifestKind, readDash, readHls, type ManifestReading } from './manifest.reader.js';
import { applyProbe, type MediaProber, type ProbedFacts } from './media-prober.js';
import { extractPage } from './page-extractor.js';
import { asCallerOrPlayer, needReferer } from './request-headers.js';
import type {
  CoverImage,
  MediaFormat,
  MediaMetadata,
  ParseMode,
  ParseProvider,
  ParseQuality,
  ParseRequest,
  ParseResult,
} from './parse.types.js';

export interface BuiltinOptions {
  client: GuardedHttpClient;
  /** Largest page read, in bytes. */
  pageMaxBytes: number;
  /** Largest HLS playlist or DASH manifest read, in bytes. */
  manifestMaxBytes: number;
  /** Items of a gallery listed at most. */
  maxItems: number;
  /** Formats probed at most while looking for a silent one. */
  maxProbes: number;
  prober: MediaProber;
}

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
/** Manifests read per parse: a page naming more is hostile or broken, and the first ones decide. */
const MAX_MANIFESTS = 4;

const isManifest = (f: MediaFormat) => f.container === 'm3u8' || f.container === 'mpd';

/** Reads one format's facts for this parse (its account's budget, its page as Referer where the source asks for it). */
type Probe = (format: MediaFormat) => Promise<ProbedFacts | null>;

/** What the page (or the media URL itself) offers before a format is chosen. */
interface Offer {
  sources: ItemSource[];
  pictures: PictureSource[];
  cover: CoverImage | null;
  metadata: MediaMetadata;
  /** A manifest URL's own text, already read by the first GET. */
  manifestText: { url: string; text: string } | null;
  direct: boolean;
  /** The page named its media only in AMP players, links or embedded JSON: it is used once read. */
  hidden: boolean;
  /** The page the media was found on (after redirects), sent as Referer when reading it; null for a URL that is media itself. */
  pageUrl: string | null;
}

/** What a URL that is itself media (a file or a manifest) offers: that one format, and nothing known of it but its site. */
function directOffer(format: MediaFormat, url: string, manifestText: Offer['manifestText']): Offer {
  return {
    sources: [{ formats: [format], title: null, cover: null, durationSeconds: null }],
    pictures: [],
    cover: null,
    metadata: { title: null, author: null, durationSeconds: null, publishedAt: null, description: null, site: new URL(url).hostname },
    manifestText,
    direct: true,
    hidden: false,
    pageUrl: null,
  };
}

/**
 * The pure-Node provider: reads the page through the guarded client and takes what the page itself
 * declares (Open Graph, Twitter cards, JSON-LD, <video>/<audio>), or the URL itself when it is
 * media. HLS and DASH manifests are read into their variants; what nothing states (size, length,
 * sound) is probed, within bounds.
 */
export class BuiltinParseProvider implements ParseProvider {
  readonly name = 'builtin';

  constructor(private readonly options: BuiltinOptions) {}

  async parse(request: ParseRequest): Promise<ParseResult> {
    const { signal, mode, quality, accountId } = request;
    const offer = await this.offer(request);
    const probed = new Set<string>();
    // Every read after the page's may need the page as Referer, as its player sends it (see MediaProber.probe).
    const probe = (format: MediaFormat) => this.options.prober.probe(format, signal, accountId, offer.pageUrl);
    if (offer.hidden) offer.sources = await this.readHidden(offer.sources, mode, probed, probe);
    try {
      await this.expandManifests(offer, signal);
    } catch (err) {
      // A hidden link to a manifest that cannot be read was a guess, not media the page declared.
      if (!offer.hidden || !(err instanceof ProviderError) || signal.aborted) throw err;
      throw new ProviderError(this.name, 'no_media', 'The page names media only in links or scripts, and its manifest cannot be read.', {
        cause: err,
      });
    }
    if (!offer.sources.length) throw new ProviderError(this.name, 'no_media', 'The page declares no video or audio.');
    if (mode === 'mute') await this.findSound(offer.sources, quality, probed, probe, 'silent');
    // No audio-only format and no separate track: a video known to have sound is what the audio can be taken from.
    if (mode === 'audio') await this.findSound(offer.sources, quality, probed, probe, 'sound');
    const chosen = chooseItems(this.name, offer.sources, mode, quality);
    const { source, selection } = chosen[0];
    const media = selection.media;
    const declaredDuration =
      media.durationSeconds ?? source.durationSeconds ?? (offer.sources.length === 1 ? offer.metadata.durationSeconds : null);
    // A direct URL says nothing about itself; a page's pick may lack its size or length.
    if (!probed.has(media.url) && (offer.direct || (media.kind === 'video' && media.height === null) || declaredDuration === null)) {
      applyProbe(media, await probe(media));
    }
    const built = buildMedia(chosen, offer.pictures, mode, this.options.maxItems);
    return {
      ...built,
      cover: offer.cover ?? source.cover,
      metadata: { ...offer.metadata, durationSeconds: offer.metadata.durationSeconds ?? built.media.durationSeconds },
    };
  }

  /** One GET: a page's body is read, a manifest's text too; a direct media file is recognised from its headers and left unread. */
  private async offer(request: ParseRequest): Promise<Offer> {
    const { client, pageMaxBytes } = this.options;
    const page = await this.call(() =>
      client.request(request.url, {
        signal: request.signal,
        maxBytes: pageMaxBytes,
        headers: { accept: BROWSER_ACCEPT },
        wantBody: (url, headers) => {
          const direct = classifyDirectMedia(headers['content-type'] ?? null, url);
          return !direct || isManifest(direct);
        },
      }),
    );
    const direct = classifyDirectMedia(page.headers['content-type'] ?? null, page.url);
    if (direct) {
      if (direct.kind === 'image') throw new ProviderError(this.name, 'no_media', 'The URL is an image, not video or audio.');
      return directOffer(direct, page.url, isManifest(direct) ? { url: direct.url, text: this.manifestText(page.body) } : null);
    }
    const contentType = page.headers['content-type'] ?? '';
    const text = decodeHtml(page.body, contentType);
    // Servers label playlists text/plain or octet-stream as often as not: the text itself decides.
    const kind = manifestKind(text);
    if (kind && !/html/i.test(contentType)) {
      const format = {
        ...classifyDirectMedia(kind === 'm3u8' ? 'application/vnd.apple.mpegurl' : 'application/dash+xml', page.url)!,
        url: page.url,
      };
      return directOffer(format, page.url, { url: page.url, text: this.manifestText(page.body) });
    }
    if (!/html|xml/i.test(contentType) && contentType !== '') {
      throw new ProviderError(this.name, 'no_media', 'The URL is neither a web page nor media.');
    }
    const extracted = extractPage(text, page.url);
    return {
      sources: extracted.items,
      pictures: extracted.pictures,
      cover: extracted.images[0] ?? null,
      metadata: extracted.metadata,
      manifestText: null,
      direct: false,
      hidden: extracted.hidden,
      pageUrl: page.url,
    };
  }

  private manifestText(body: Buffer): string {
    if (body.length > this.options.manifestMaxBytes) {
      throw new ProviderError(
        this.name,
        'no_media',
        `The manifest is larger than the ${this.options.manifestMaxBytes} bytes the gateway reads.`,
      );
    }
    return body.toString('utf8');
  }

  /**
   * Replaces each HLS or DASH manifest by its variants and renditions, keeping the manifest itself
   * as one more format (adaptive players want it). A manifest that cannot be read is dropped; when
   * nothing else is left, its failure is the answer. A manifest pointing at non-public addresses
   * is refused whole.
   */
  private async expandManifests(offer: Offer, signal: AbortSignal): Promise<void> {
    let read = 0;
    let failure: unknown = null;
    for (const source of offer.sources) {
      const expanded: MediaFormat[] = [];
      for (const format of source.formats) {
        if (!isManifest(format)) {
          expanded.push(format);
          continue;
        }
        if (read >= MAX_MANIFESTS) continue;
        read += 1;
        try {
          const { value: text, referer } =
            offer.manifestText?.url === format.url
              ? { value: offer.manifestText.text, referer: null }
              : await asCallerOrPlayer(format, offer.pageUrl, (headers) => this.fetchManifest(format.url, signal, headers));
          const reading = this.readManifest(text, format.url);
          await this.checkAddresses(reading);
          // A manifest served only to its page's player: its variants and renditions come from the same place.
          if (referer)
            needReferer([reading.manifest, ...reading.formats, ...reading.formats.flatMap((f) => (f.audio ? [f.audio] : []))], referer);
          expanded.push(...reading.formats, { ...reading.manifest, height: reading.formats.length ? null : format.height });
        } catch (err) {
          if (err instanceof AppError || signal.aborted) throw err;
          failure ??= err;
        }
      }
      source.formats = expanded;
    }
    offer.sources = offer.sources.filter((s) => s.formats.length > 0);
    if (!offer.sources.length && failure) throw failure;
  }

  private async fetchManifest(url: string, signal: AbortSignal, headers: Record<string, string>): Promise<string> {
    const { client, manifestMaxBytes } = this.options;
    try {
      const res = await this.call(() => client.request(url, { signal, maxBytes: manifestMaxBytes, headers }));
      return res.body.toString('utf8');
    } catch (err) {
      if (err instanceof ProviderError && err.kind === 'no_media' && err.cause instanceof FetchError && err.cause.kind === 'too_large') {
        throw new ProviderError(this.name, 'no_media', `The manifest is larger than the ${manifestMaxBytes} bytes the gateway reads.`, {
          cause: err,
        });
      }
      throw err;
    }
  }

  private readManifest(text: string, url: string): ManifestReading {
    try {
      const kind = manifestKind(text);
      if (kind === 'm3u8') return readHls(text, url);
      if (kind === 'mpd') return readDash(text, url);
      throw new ManifestError('The URL is served as a playlist but is neither HLS nor DASH.');
    } catch (err) {
      if (err instanceof ManifestError) throw new ProviderError(this.name, 'no_media', err.message, { cause: err });
      throw err;
    }
  }

  /** Every variant and rendition a manifest names must be fetchable under the same rules as the manifest. */
  private async checkAddresses(reading: ManifestReading): Promise<void> {
    const origins = new Map<string, string>();
    for (const f of [...reading.formats, ...reading.formats.flatMap((v) => (v.audio ? [v.audio] : []))]) {
      const origin = new URL(f.url).origin;
      if (!origins.has(origin)) origins.set(origin, f.url);
    }
    for (const url of origins.values()) await this.options.client.checkUrl(url);
  }

  /**
   * Media a page names only in AMP players, links or embedded JSON is used once read as video or
   * audio (text served as .mp4, a private address, a dead link is not): the first item with a
   * format that reads so is the page's media, its formats that read so its renditions (the page's
   * other links are other episodes, related clips, ads). Manifests are read by expandManifests,
   * which drops what is none. At most `maxProbes` reads per parse, however many links the page has.
   */
  private async readHidden(sources: ItemSource[], mode: ParseMode, probed: Set<string>, probe: Probe): Promise<ItemSource[]> {
    let left = this.options.maxProbes;
    // Asked for audio, a page's audio (an AMP story's background track) comes before its videos.
    const isAudio = (s: ItemSource) => s.formats.some((f) => f.kind === 'audio');
    const ordered = mode === 'audio' ? [...sources.filter(isAudio), ...sources.filter((s) => !isAudio(s))] : sources;
    for (const source of ordered) {
      const tried = source.formats.slice(0, left);
      left -= tried.length;
      const media = await Promise.all(tried.map((f) => this.readsAsMedia(f, probe)));
      tried.forEach((f) => probed.add(f.url));
      const formats = tried.filter((_, i) => media[i]);
      if (formats.length) return [{ ...source, formats }];
      if (left <= 0) break;
    }
    throw new ProviderError(
      this.name,
      'no_media',
      'The page names media only in links, scripts or AMP tags, and none of what was read is video or audio.',
    );
  }

  /** Whether a hidden format is media: a file read as video or audio (its facts kept), a manifest at an address the gateway may fetch. */
  private async readsAsMedia(format: MediaFormat, probe: Probe): Promise<boolean> {
    if (isManifest(format)) {
      try {
        await this.options.client.checkUrl(format.url);
        return true;
      } catch (err) {
        if (err instanceof AppError) return false;
        throw err;
      }
    }
    const facts = await probe(format);
    if (!facts || !(facts.hasVideo || facts.hasAudio)) return false;
    applyProbe(format, facts);
    return true;
  }

  /**
   * Probes the best candidates whose sound nothing states (bounded), when the mode needs to know:
   * `silent` (mode mute) unless a video is known silent; `sound` (mode audio) unless there is an
   * audio format, a separate track or a video known to have sound.
   */
  private async findSound(
    sources: ItemSource[],
    quality: ParseQuality,
    probed: Set<string>,
    probe: Probe,
    wanted: 'silent' | 'sound',
  ): Promise<void> {
    const formats = sources.flatMap((s) => s.formats);
    const videos = formats.filter((f) => f.kind === 'video');
    if (wanted === 'silent' && videos.some((f) => f.hasAudio === false)) return;
    if (wanted === 'sound' && formats.some((f) => f.kind === 'audio' || f.audio || (f.kind === 'video' && f.hasAudio === true))) return;
    const unknown = rankByQuality(
      videos.filter((f) => f.hasAudio === null && f.container !== 'mpd'),
      quality,
    ).slice(0, this.options.maxProbes);
    const facts = await Promise.all(unknown.map(probe));
    unknown.forEach((f, i) => {
      probed.add(f.url);
      applyProbe(f, facts[i]);
    });
  }

  /** Maps the client's failures onto what they mean for the caller; URL_NOT_ALLOWED passes through. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof FetchError)) throw err;
      const reason = `the page could not be fetched (${failureReason(err)})`;
      if (err.kind === 'timeout') throw new ProviderError(this.name, 'timeout', err.message, { cause: err, reason });
      // Gone, or not for us: the content cannot be had (a server's own failure is not that).
      if (err.kind === 'http_status' && [401, 403, 404, 410, 451].includes(err.status!)) {
        throw new ProviderError(this.name, 'unavailable_content', `The page answered ${err.status}.`, { cause: err, reason });
      }
      if (err.kind === 'too_large')
        throw new ProviderError(this.name, 'no_media', 'The page is larger than the parser reads.', { cause: err });
      throw new ProviderError(this.name, 'failed', err.message, { cause: err, reason });
    }
  }
}

/** The page's text in its declared charset (header, then <meta charset>), UTF-8 when unsaid or unknown. */
export function decodeHtml(body: Buffer, contentType: string): string {
  const head = body.subarray(0, 2048).toString('latin1');
  const charset =
    /charset\s*=\s*["']?([\w.:-]+)/i.exec(contentType)?.[1] ?? /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1] ?? 'utf-8';
  return iconv.decode(body, iconv.encodingExists(charset) ? charset : 'utf-8');
}
