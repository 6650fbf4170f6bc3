import { ProviderError } from '../../errors.js';
import { heightHint, mediaTypeOfExtension } from './media-types.js';
import {
  mediaFormat,
  type MediaFormat,
  type MediaKind,
  type ParseItem,
  type ParseProvider,
  type ParseRequest,
  type ParseResult,
} from './parse.types.js';

export interface CobaltOptions {
  /** The instance's root, where cobalt answers `POST /` (COBALT_API_URL). */
  apiUrl: string;
  /** Sent as `Authorization: Api-Key <key>` when the instance requires keys (COBALT_API_KEY). */
  apiKey?: string | null;
  timeoutMs: number;
}

/** cobalt's documented answers to `POST /` (api v10). */
type CobaltResponse =
  | { status: 'tunnel' | 'redirect'; url: string; filename?: string }
  | { status: 'picker'; picker: { type: 'photo' | 'video' | 'gif'; url: string; thumb?: string }[]; audio?: string; audioFilename?: string }
  | { status: 'error'; error: { code: string; context?: Record<string, unknown> } }
  | { status: 'local-processing'; tunnel?: string[]; output?: { filename?: string } };

/** cobalt error codes that mean the content cannot be had, or that there is nothing cobalt can fetch. */
const UNAVAILABLE = /^error\.api\.content\.|^error\.api\.youtube\.(login|age)/;
const NO_MEDIA = /^error\.api\.(link\.|service\.unsupported|service\.disabled|fetch\.empty)/;

/**
 * A self-hosted cobalt instance. It speaks our vocabulary (downloadMode auto|audio|mute,
 * videoQuality max|1080|720|480), so this adapter only maps its answer onto the result shape.
 */
export class CobaltParseProvider implements ParseProvider {
  readonly name = 'cobalt';

  constructor(private readonly options: CobaltOptions) {}

  async parse(request: ParseRequest): Promise<ParseResult> {
    const body = await this.call(request);
    const site = new URL(request.url).hostname;
    const metadata = { title: null, author: null, durationSeconds: null, publishedAt: null, description: null, site };
    switch (body.status) {
      case 'tunnel':
      case 'redirect': {
        const media = this.format(body.url, body.filename ?? null, request.mode === 'audio' ? 'audio' : 'video', request.mode);
        return { media, alternatives: [], items: [], itemsTotal: 0, cover: null, metadata };
      }
      case 'picker': {
        const items: ParseItem[] = body.picker.map((p) => ({
          ...this.format(p.url, null, p.type === 'photo' ? 'image' : 'video', request.mode),
          title: null,
          cover: p.thumb ? { url: p.thumb, width: null, height: null } : null,
          alternatives: [],
        }));
        const audio = body.audio ? this.format(body.audio, body.audioFilename ?? null, 'audio', 'audio') : null;
        const first = request.mode === 'audio' && audio ? audio : (items.find((i) => i.kind === 'video') ?? items[0]);
        if (!first) throw new ProviderError(this.name, 'no_media', 'cobalt offered an empty picker');
        const { title: _t, cover: _c, alternatives: _a, ...media } = first as ParseItem;
        const thumb = body.picker.find((p) => p.thumb)?.thumb;
        return {
          media,
          alternatives: [],
          items,
          itemsTotal: items.length,
          cover: thumb ? { url: thumb, width: null, height: null } : null,
          metadata,
        };
      }
      case 'error': {
        const code = String(body.error?.code ?? 'unknown');
        if (UNAVAILABLE.test(code)) throw new ProviderError(this.name, 'unavailable_content', `cobalt: ${code}`);
        if (NO_MEDIA.test(code)) throw new ProviderError(this.name, 'no_media', 'cobalt cannot fetch media from this link.');
        throw new ProviderError(this.name, 'failed', `cobalt: ${code}`);
      }
      default:
        // local-processing asks the client to merge streams itself; we return direct URLs only.
        throw new ProviderError(this.name, 'failed', `cobalt answered status ${(body as { status: string }).status}`);
    }
  }

  private async call(request: ParseRequest): Promise<CobaltResponse> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    let res: Response;
    try {
      res = await fetch(`${this.options.apiUrl.replace(/\/+$/, '')}/`, {
        method: 'POST',
        headers: {
          accept: 'application/json',
          'content-type': 'application/json',
          ...(this.options.apiKey ? { authorization: `Api-Key ${this.options.apiKey}` } : {}),
        },
        body: JSON.stringify({ url: request.url, downloadMode: request.mode, videoQuality: request.quality, filenameStyle: 'classic' }),
        signal: AbortSignal.any([request.signal, timeout]),
        redirect: 'error',
      });
    } catch (err) {
      if (request.signal.aborted) throw request.signal.reason;
      if (timeout.aborted) throw new ProviderError(this.name, 'timeout', 'cobalt did not answer in time');
      throw new ProviderError(this.name, 'failed', `cobalt unreachable: ${(err as Error).message}`);
    }
    let body: CobaltResponse;
    try {
      // cobalt answers errors with 4xx and the same JSON shape, so the body decides, not the status.
      body = (await res.json()) as CobaltResponse;
    } catch {
      throw new ProviderError(this.name, 'failed', `cobalt answered ${res.status} without JSON`);
    }
    if (!body || typeof body !== 'object' || typeof body.status !== 'string') {
      throw new ProviderError(this.name, 'failed', `cobalt answered ${res.status} with an unknown shape`);
    }
    return body;
  }

  /** A cobalt URL as a format: the classic filename carries the resolution; tunnel URLs carry their expiry. */
  private format(url: string, filename: string | null, kind: MediaKind, mode: ParseRequest['mode']): MediaFormat {
    const ext = filename ? /\.([a-z0-9]{2,4})$/i.exec(filename)?.[1] : null;
    const type = mediaTypeOfExtension(ext ?? null);
    const actualKind = type?.kind ?? kind;
    const dims = filename ? /(\d{3,4})x(\d{3,4})/.exec(filename) : null;
    let expiresAt: string | null = null;
    const exp = Number(URL.parse(url)?.searchParams.get('exp'));
    if (Number.isFinite(exp) && exp > 0) expiresAt = new Date(exp < 1e12 ? exp * 1000 : exp).toISOString();
    return mediaFormat({
      url,
      kind: actualKind,
      container: type?.container ?? null,
      width: dims ? Number(dims[1]) : null,
      height: dims ? Number(dims[2]) : actualKind === 'video' ? heightHint(filename) : null,
      // cobalt merges the sound into a video unless asked to mute it, and a photo has none.
      hasAudio: actualKind === 'audio' || (actualKind === 'video' && mode !== 'mute'),
      expiresAt,
    });
  }
}
