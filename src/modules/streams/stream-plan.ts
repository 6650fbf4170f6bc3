import { streamRecipe, type AudioFormat, type StreamProcessing } from '../../media/stream-recipe.js';
import type { MediaFormat, ParseItem, ParseMode, ParseResult } from '../../providers/parse/parse.types.js';
import { mediaRequestHeaders } from '../../providers/parse/request-headers.js';
import type { StreamSource, StreamTokens } from './stream-token.js';

/** Who a parse's streams belong to and how they are to be made. */
export interface DeliveryPlan {
  jobId: string;
  accountId: string;
  apiKeyId: string | null;
  /** Whether the parse needed a membership: a stream is refused once it has ended. */
  membership: boolean;
  /** The page: every source is fetched with it as Referer, as the page's own player would. */
  pageUrl: string;
  mode: ParseMode;
  audioFormat: AudioFormat;
  /** The caller asked for every format through the gateway. */
  stream: boolean;
  publicUrl: string;
  ttlMs: number;
  now: number;
}

/**
 * Request headers a browser sends by itself whatever the page: a format that lists only these
 * plays from its URL alone. Anything else (Referer, Cookie, Origin, Authorization, ...) is a
 * header the caller would have to forge, so the gateway sends it instead.
 */
const ORDINARY_HEADERS = /^(user-agent|accept|accept-language|accept-encoding|sec-fetch-[a-z]+|sec-ch-[a-z-]+)$/i;

/** Whether a format's URL needs request headers the caller would have to forge (see ORDINARY_HEADERS). */
export function needsHeaders(f: MediaFormat): boolean {
  return Object.keys(f.headers ?? {}).some((name) => !ORDINARY_HEADERS.test(name));
}

const MANIFESTS = new Set(['m3u8', 'mpd']);

/**
 * Sets `delivery` on every format of a parse answer, turning into the gateway's stream URLs those
 * the caller cannot play from the source itself (CONTRACT.md, Streams): a derived format (sound
 * taken out of a video, or left out of it), the chosen video of mode auto whose sound is a separate
 * track (joined into one file), a format needing headers, an audio format in another codec than
 * asked, or every one when the caller asked for streams.
 */
export function planDelivery(result: ParseResult, plan: DeliveryPlan, tokens: StreamTokens): ParseResult {
  const title = result.metadata.title;
  const deliver = (f: MediaFormat, chosen: boolean, itemTitle: string | null = title): MediaFormat => {
    const processing = processingOf(f, chosen, plan);
    const audio = f.audio ? deliver(f.audio, false, itemTitle) : f.audio;
    const { derived: _derived, ...format } = f;
    if (!processing) return { ...format, ...(f.audio !== undefined ? { audio } : {}), delivery: 'direct' };
    const parts = processing === 'merge' && f.audio ? [f, f.audio] : [f];
    const sources = parts.map((p) => sourceOf(p, plan.pageUrl));
    const kind = f.kind === 'audio' ? 'audio' : 'video';
    const recipe = processing === 'pass' && !sources[0].manifest ? null : streamRecipe(processing, sources, kind);
    const upstreamExpiry = parts.map((p) => (p.expiresAt ? Date.parse(p.expiresAt) : Number.NaN)).filter(Number.isFinite);
    const expiresAt = Math.min(plan.now + plan.ttlMs, ...upstreamExpiry);
    const token = tokens.seal({
      jobId: plan.jobId,
      accountId: plan.accountId,
      apiKeyId: plan.apiKeyId,
      membership: plan.membership,
      sources,
      processing,
      title: itemTitle,
      kind,
      expiresAt,
    });
    return {
      ...format,
      url: `${plan.publicUrl}/api/streams/${token}`,
      container: recipe?.container ?? f.container,
      codecs: processing === 'merge' ? [f.codecs, f.audio?.codecs].filter(Boolean).join(',') || null : format.codecs,
      hasAudio: processing === 'merge' ? true : format.hasAudio,
      expiresAt: new Date(expiresAt).toISOString(),
      headers: null,
      ...(f.audio !== undefined ? { audio } : {}),
      delivery: 'stream',
    };
  };
  const item = (i: ParseItem): ParseItem => ({
    ...(deliver(i, true, i.title ?? title) as MediaFormat & Pick<ParseItem, 'title' | 'cover'>),
    title: i.title,
    cover: i.cover,
    alternatives: i.alternatives.map((a) => deliver(a, false, i.title ?? title)),
  });
  return {
    ...result,
    media: deliver(result.media, true),
    alternatives: result.alternatives.map((a) => deliver(a, false)),
    items: result.items.map(item),
  };
}

/** What the gateway must do for a format, or null when its own URL is the answer. */
function processingOf(f: MediaFormat, chosen: boolean, plan: DeliveryPlan): StreamProcessing | null {
  if (f.kind === 'image') return null;
  if (f.derived === 'audio') return `audio:${plan.audioFormat}`;
  if (f.derived === 'mute') return 'mute';
  if (chosen && plan.mode === 'auto' && f.kind === 'video' && f.audio && f.hasAudio !== true) return 'merge';
  // An audio format asked in another codec: converted on the way (a format already in it is direct).
  if (f.kind === 'audio' && plan.mode === 'audio' && plan.audioFormat !== 'best' && !alreadyIn(f, plan.audioFormat))
    return `audio:${plan.audioFormat}`;
  if (plan.stream || needsHeaders(f)) return f.kind === 'audio' && MANIFESTS.has(f.container ?? '') ? `audio:${plan.audioFormat}` : 'pass';
  return null;
}

function alreadyIn(f: MediaFormat, format: AudioFormat): boolean {
  const c = f.container;
  if (format === 'mp3') return c === 'mp3';
  if (format === 'm4a') return c === 'm4a' || c === 'mp4';
  if (format === 'opus') return c === 'opus' || ((c === 'ogg' || c === 'webm' || c === 'weba') && /opus/i.test(f.codecs ?? ''));
  return c === 'wav';
}

/** A format as a stream's input: its URL, the headers the provider reported, and the page as Referer unless it named one. */
function sourceOf(f: MediaFormat, pageUrl: string): StreamSource {
  const headers = mediaRequestHeaders(f, pageUrl);
  const manifest = f.container === 'm3u8' || f.container === 'mpd' ? f.container : null;
  return { url: f.url, headers, manifest, codecs: f.codecs, container: f.container };
}
