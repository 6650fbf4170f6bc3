import { AppError, ProviderError } from '../../errors.js';
import { MediaError, runTool } from '../../media/ffmpeg.js';
import { startGuardedProxy } from '../../net/guarded-proxy.js';
import { buildMedia, chooseItems, type ItemSource } from './item-assembly.js';
import { mediaTypeOfExtension } from './media-types.js';
import { mediaFormat, type MediaFormat, type ParseProvider, type ParseRequest, type ParseResult } from './parse.types.js';

export interface YtdlpOptions {
  /** The yt-dlp program (YTDLP_PATH). */
  path: string;
  /** FETCH_ALLOW_HOSTS, handed to the proxy yt-dlp must use. */
  allowHosts: readonly string[];
  timeoutMs: number;
  /** Entries of a playlist read at most; the rest are only counted. */
  maxItems: number;
}

/** The parts of `yt-dlp -J` this adapter reads. */
interface YtdlpFormat {
  url?: string;
  ext?: string;
  protocol?: string;
  vcodec?: string | null;
  acodec?: string | null;
  width?: number | null;
  height?: number | null;
  abr?: number | null;
  tbr?: number | null;
  duration?: number | null;
  http_headers?: Record<string, string>;
}
interface YtdlpInfo extends YtdlpFormat {
  _type?: string;
  entries?: (YtdlpInfo | null)[];
  playlist_count?: number;
  title?: string;
  uploader?: string;
  channel?: string;
  duration?: number;
  upload_date?: string;
  description?: string | null;
  thumbnail?: string | null;
  webpage_url_domain?: string;
  extractor_key?: string;
  formats?: YtdlpFormat[];
}

const UNAVAILABLE =
  /private video|video unavailable|has been removed|not available in your country|geo.?restrict|sign in to confirm your age|members.only|premieres in|is live|this live event/i;
const NO_MEDIA = /unsupported url|no video formats found|unable to extract|no media found/i;

/**
 * yt-dlp (`-J`), which knows a thousand sites. It fetches by itself, so it is made to go through a
 * guarded forward proxy: every connection it makes, redirects included, meets the same rules as
 * ours, and a refusal there is the caller's URL_NOT_ALLOWED.
 */
export class YtdlpParseProvider implements ParseProvider {
  readonly name = 'ytdlp';

  constructor(private readonly options: YtdlpOptions) {}

  async parse(request: ParseRequest): Promise<ParseResult> {
    const proxy = await startGuardedProxy(this.options.allowHosts);
    let info: YtdlpInfo;
    try {
      const out = await runTool(
        this.options.path,
        [
          '-J',
          '--no-playlist',
          '--no-warnings',
          '--ignore-config',
          '--socket-timeout',
          '15',
          '--proxy',
          proxy.url,
          // A playlist (a gallery, a channel) is read only as far as the items listed.
          '--playlist-items',
          `1:${this.options.maxItems}`,
          '--',
          request.url,
        ],
        { signal: request.signal, timeoutMs: this.options.timeoutMs },
        this.options.timeoutMs,
      );
      info = JSON.parse(out) as YtdlpInfo;
    } catch (err) {
      if (request.signal.aborted) throw request.signal.reason;
      if (proxy.refused.length)
        throw new AppError('URL_NOT_ALLOWED', 'The URL is not allowed: it leads to a private, loopback or reserved address.');
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof MediaError && err.kind === 'timeout')
        throw new ProviderError(this.name, 'timeout', 'yt-dlp did not finish in time');
      if (UNAVAILABLE.test(message)) throw new ProviderError(this.name, 'unavailable_content', `yt-dlp: ${message}`);
      if (NO_MEDIA.test(message)) throw new ProviderError(this.name, 'no_media', 'yt-dlp found no media at this URL.');
      throw new ProviderError(this.name, 'failed', `yt-dlp: ${message}`);
    } finally {
      await proxy.close();
    }
    return this.toResult(info, request);
  }

  private toResult(info: YtdlpInfo, request: ParseRequest): ParseResult {
    const entries = info._type === 'playlist' ? (info.entries ?? []).filter((e): e is YtdlpInfo => !!e) : [info];
    const sources: ItemSource[] = entries.map((entry) => ({
      formats: formatsOf(entry),
      title: entry.title ?? null,
      cover: entry.thumbnail ? { url: entry.thumbnail, width: null, height: null } : null,
      durationSeconds: typeof entry.duration === 'number' ? entry.duration : null,
    }));
    if (!sources.some((s) => s.formats.length)) throw new ProviderError(this.name, 'no_media', 'yt-dlp found no direct media at this URL.');
    const chosen = chooseItems(
      this.name,
      sources.filter((s) => s.formats.length),
      request.mode,
      request.quality,
    );
    // Entries past the cap were never extracted, but the playlist knows how many there are.
    const declared = info._type === 'playlist' ? (info.playlist_count ?? 0) : 0;
    const built = buildMedia(chosen, [], request.mode, this.options.maxItems, declared);
    const first = chosen[0].source;
    const main = info._type === 'playlist' ? (entries[0] ?? info) : info;
    return {
      ...built,
      cover: first.cover,
      metadata: {
        title: info.title ?? main.title ?? null,
        author: info.uploader ?? info.channel ?? main.uploader ?? main.channel ?? null,
        durationSeconds: typeof main.duration === 'number' ? main.duration : null,
        publishedAt: dateOf(main.upload_date ?? info.upload_date),
        description: info.description ?? main.description ?? null,
        site: info.webpage_url_domain ?? main.webpage_url_domain ?? new URL(request.url).hostname,
      },
    };
  }
}

/** YYYYMMDD as an ISO date. */
function dateOf(d: string | undefined): string | null {
  return d && /^\d{8}$/.test(d) ? `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6)}` : null;
}

/** An entry's direct formats; a video-only stream gets the best audio-only stream (highest bitrate) as its companion. */
function formatsOf(info: YtdlpInfo): MediaFormat[] {
  const raw = (info.formats?.length ? info.formats : [info]).filter((f) => f.url && /^https?:/.test(f.url));
  const formats = raw.map((f) => toFormat(f, info.duration ?? null));
  const bitrate = (i: number) => raw[i].abr ?? raw[i].tbr ?? 0;
  const audioIndexes = formats.map((f, i) => (f.kind === 'audio' ? i : -1)).filter((i) => i >= 0);
  const best = audioIndexes.sort((a, b) => bitrate(b) - bitrate(a))[0];
  const bestAudio = best === undefined ? null : formats[best];
  for (const f of formats) if (f.kind === 'video' && f.hasAudio === false && bestAudio) f.audio = bestAudio;
  return formats.filter((f) => f.kind !== 'image');
}

function toFormat(f: YtdlpFormat, duration: number | null): MediaFormat {
  const byExt = mediaTypeOfExtension(f.ext ?? null);
  const noVideo = f.vcodec === 'none' || (byExt?.kind === 'audio' && !f.vcodec);
  const noAudio = f.acodec === 'none';
  const kind = noVideo ? 'audio' : byExt?.kind === 'image' ? 'image' : 'video';
  const protocol = f.protocol ?? '';
  const container = protocol.startsWith('m3u8') ? 'm3u8' : protocol.includes('dash') ? 'mpd' : (byExt?.container ?? f.ext ?? null);
  const codecs = [f.vcodec, f.acodec].filter((c): c is string => !!c && c !== 'none').join(',') || null;
  const tbr = f.tbr ?? f.abr ?? null;
  return mediaFormat({
    url: f.url!,
    kind,
    container,
    width: kind === 'audio' ? null : (f.width ?? null),
    height: kind === 'audio' ? null : (f.height ?? null),
    bitrate: tbr ? Math.round(tbr * 1000) : null,
    codecs,
    durationSeconds: f.duration ?? duration,
    // yt-dlp says "none" when a stream is known to be absent, and nothing when it does not know.
    hasAudio: kind === 'audio' ? true : noAudio ? false : f.acodec ? true : null,
    headers: f.http_headers && Object.keys(f.http_headers).length ? f.http_headers : null,
  });
}
