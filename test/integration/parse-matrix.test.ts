import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, TEST_PEPPER, type Harness } from '../support/harness.js';
import { StreamTokens } from '../../src/modules/streams/stream-token.js';
import { serveLibrary } from '../support/media-library.js';
import { TEST_DATABASES } from '../support/test-database.js';
import { parseBody, type ParseBody, type ErrorBody } from '../support/bodies.js';

/**
 * Every page kind × mode × the qualities that matter, through both doors, on real media made by
 * ffmpeg (progressive files with and without sound, HLS and DASH from ffmpeg's own muxers). Each
 * cell asserts the chosen URL, kind and height, and that one credit was charged, or none on a refusal.
 * A streamed cell (`stream`: what the gateway does) names the source its sealed stream URL stands for.
 */

const AV = 'video/mp4; codecs="avc1.42c01f, mp4a.40.2"';
const V = 'video/mp4; codecs="avc1.42c01f"';

/** Pages as sites write them; `o` is the fake site's origin. */
const PAGES: Record<string, (o: string) => string> = {
  og: (o) => `<!doctype html><html><head><title>Harbour</title>
    <meta property="og:title" content="Harbour at dawn"><meta property="og:type" content="video.other">
    <meta property="og:video" content="${o}/media/av-1080.mp4"><meta property="og:video:type" content="video/mp4">
    <meta property="og:video:width" content="1920"><meta property="og:video:height" content="1080">
    <meta property="og:video" content="${o}/media/av-720.mp4"><meta property="og:video:type" content="video/mp4">
    <meta property="og:video:width" content="1280"><meta property="og:video:height" content="720">
    <meta property="og:video" content="${o}/media/av-480.mp4"><meta property="og:video:type" content="video/mp4">
    <meta property="og:video:height" content="480">
    <meta property="og:image" content="${o}/media/cover.jpg"></head><body><p>Dawn.</p></body></html>`,
  twitter: (o) => `<!doctype html><html><head><title>Seals</title>
    <meta name="twitter:card" content="player"><meta name="twitter:title" content="Seals">
    <meta name="twitter:player" content="${o}/embed/seals"><meta name="twitter:player:width" content="1280"><meta name="twitter:player:height" content="720">
    <meta name="twitter:player:stream" content="${o}/media/av-720.mp4">
    <meta name="twitter:player:stream:content_type" content='${AV}'>
    <meta name="twitter:image" content="${o}/media/cover.jpg"></head><body></body></html>`,
  jsonld: (o) => `<!doctype html><html><head><title>News</title><script type="application/ld+json">
    {"@context":"https://schema.org","@type":"NewsArticle","headline":"Barrier test","video":{"@type":"VideoObject",
     "name":"Barrier test","contentUrl":"${o}/media/av-1080.mp4","encodingFormat":"video/mp4","width":1920,"height":1080,
     "duration":"PT2S","thumbnailUrl":"${o}/media/cover.jpg","uploadDate":"2026-06-01"}}</script></head><body></body></html>`,
  ladder: (o) => `<!doctype html><html><head><title>Ladder</title></head><body>
    <video controls poster="${o}/media/cover.jpg">
      <source src="${o}/media/av-1080.mp4" type='${AV}' size="1080">
      <source src="${o}/media/av-720.mp4" type='${AV}' size="720">
      <source src="${o}/media/av-480.mp4" type='${AV}' size="480">
      <source src="${o}/media/v-1080.mp4" type='${V}' size="1080">
      <source src="${o}/media/v-720.mp4" type='${V}' size="720">
      <source src="${o}/media/v-480.mp4" type='${V}' size="480">
    </video></body></html>`,
  // No codecs anywhere: only a probe can tell the silent file from the other.
  untyped: (o) => `<!doctype html><html><head><title>Untyped</title></head><body>
    <video controls><source src="${o}/media/av-720.mp4" type="video/mp4"><source src="${o}/media/v-720.mp4" type="video/mp4"></video>
    </body></html>`,
  audio: (o) => `<!doctype html><html><head><title>Episode 12</title></head><body>
    <audio controls><source src="${o}/media/audio.mp3" type="audio/mpeg"><source src="${o}/media/audio.m4a" type="audio/mp4"></audio></body></html>`,
  hlsPage: (o) => `<!doctype html><html><head><title>Live-ish</title></head><body>
    <video-js id="player" class="video-js" controls data-setup="{}"><source src="${o}/hls/split/master.m3u8" type="application/x-mpegURL"></video-js>
    </body></html>`,
  gallery: (o) => `<!doctype html><html><head><title>Two clips and two photos</title><script type="application/ld+json">
    {"@context":"https://schema.org","@type":"SocialMediaPosting","headline":"Weekend","associatedMedia":[
      {"@type":"VideoObject","name":"Quiet clip","contentUrl":"${o}/media/v-720.mp4","thumbnailUrl":"${o}/media/photo-1.jpg"},
      {"@type":"VideoObject","name":"Loud clip","contentUrl":"${o}/media/av-480.mp4","thumbnailUrl":"${o}/media/photo-2.jpg"},
      {"@type":"ImageObject","name":"First photo","contentUrl":"${o}/media/photo-1.jpg","width":320,"height":240},
      {"@type":"ImageObject","name":"Second photo","contentUrl":"${o}/media/photo-2.jpg","width":320,"height":240}]}
    </script></head><body>
    <figure><video controls poster="${o}/media/photo-1.jpg" src="${o}/media/v-720.mp4"></video><figcaption>Quiet clip</figcaption></figure>
    <figure><video controls poster="${o}/media/photo-2.jpg" src="${o}/media/av-480.mp4"></video><figcaption>Loud clip</figcaption></figure>
    </body></html>`,
};

/** Where each page kind is requested: a page path, or a media URL itself. */
const TARGETS: Record<string, string> = {
  og: '/p/og',
  twitter: '/p/twitter',
  jsonld: '/p/jsonld',
  ladder: '/p/ladder',
  untyped: '/p/untyped',
  audio: '/p/audio',
  hlsPage: '/p/hls',
  hlsMaster: '/hls/split/master.m3u8',
  hlsMuxed: '/hls/muxed/master.m3u8',
  hlsNoCodecs: '/hls/nocodecs/master.m3u8',
  hlsMedia: '/hls/single/index.m3u8',
  dash: '/dash/single/manifest.mpd',
  dashSegmented: '/dash/segmented/manifest.mpd',
  mp4: '/media/av-720.mp4',
  silentMp4: '/media/v-480.mp4',
  mp3: '/media/audio.mp3',
  gallery: '/p/gallery',
};

interface Success {
  url: string;
  kind: 'video' | 'audio';
  height: number | null;
  hasAudio?: boolean | null;
  audio?: string | null;
  items?: number;
  /** The answer is the gateway's stream of `url`, made so (delivery "stream"); else `url` itself (delivery "direct"). */
  stream?: 'pass' | 'audio:best' | 'mute' | 'merge';
}
type Expectation = Success | { error: 'NO_MEDIA_FOUND'; message?: RegExp };

type Cell = [kind: string, mode: 'auto' | 'audio' | 'mute', quality: 'max' | '1080' | '720' | '480', expect: Expectation];

const noSilent: Expectation = { error: 'NO_MEDIA_FOUND', message: /No silent format exists/ };
const noAudio: Expectation = { error: 'NO_MEDIA_FOUND', message: /no audio-only format/i };

const CELLS: Cell[] = [
  ['og', 'auto', '1080', { url: '/media/av-1080.mp4', kind: 'video', height: 1080 }],
  ['og', 'auto', '720', { url: '/media/av-720.mp4', kind: 'video', height: 720 }],
  ['og', 'auto', '480', { url: '/media/av-480.mp4', kind: 'video', height: 480 }],
  ['og', 'audio', '720', { url: '/media/av-720.mp4', kind: 'audio', height: null, hasAudio: true, stream: 'audio:best' }],
  ['og', 'mute', '720', { url: '/media/av-720.mp4', kind: 'video', height: 720, hasAudio: false, stream: 'mute' }], // every rendition has sound

  ['twitter', 'auto', '720', { url: '/media/av-720.mp4', kind: 'video', height: 720, hasAudio: true }],
  ['twitter', 'mute', '720', { url: '/media/av-720.mp4', kind: 'video', height: 720, hasAudio: false, stream: 'mute' }],
  ['twitter', 'audio', '720', { url: '/media/av-720.mp4', kind: 'audio', height: null, stream: 'audio:best' }],

  ['jsonld', 'auto', 'max', { url: '/media/av-1080.mp4', kind: 'video', height: 1080 }],
  ['jsonld', 'auto', '480', { url: '/media/av-1080.mp4', kind: 'video', height: 1080 }], // the only one there is
  ['jsonld', 'mute', '1080', { url: '/media/av-1080.mp4', kind: 'video', height: 1080, hasAudio: false, stream: 'mute' }], // probed
  ['jsonld', 'audio', '1080', { url: '/media/av-1080.mp4', kind: 'audio', height: null, stream: 'audio:best' }], // probed

  ['ladder', 'auto', 'max', { url: '/media/av-1080.mp4', kind: 'video', height: 1080, hasAudio: true }],
  ['ladder', 'auto', '720', { url: '/media/av-720.mp4', kind: 'video', height: 720, hasAudio: true }],
  ['ladder', 'auto', '480', { url: '/media/av-480.mp4', kind: 'video', height: 480, hasAudio: true }],
  ['ladder', 'mute', '1080', { url: '/media/v-1080.mp4', kind: 'video', height: 1080, hasAudio: false }],
  ['ladder', 'mute', '720', { url: '/media/v-720.mp4', kind: 'video', height: 720, hasAudio: false }],
  ['ladder', 'mute', '480', { url: '/media/v-480.mp4', kind: 'video', height: 480, hasAudio: false }],
  ['ladder', 'audio', '720', { url: '/media/av-720.mp4', kind: 'audio', height: null, hasAudio: true, stream: 'audio:best' }],

  ['untyped', 'auto', '720', { url: '/media/av-720.mp4', kind: 'video', height: 720, hasAudio: true }], // probed
  ['untyped', 'mute', '720', { url: '/media/v-720.mp4', kind: 'video', height: 720, hasAudio: false }], // probed until silent

  ['audio', 'auto', '720', { url: '/media/audio.m4a', kind: 'audio', height: null }],
  ['audio', 'audio', '720', { url: '/media/audio.m4a', kind: 'audio', height: null }],
  ['audio', 'mute', '720', noSilent],

  [
    'hlsPage',
    'auto',
    '720',
    {
      url: '/hls/split/720p/index.m3u8',
      kind: 'video',
      height: 720,
      hasAudio: true,
      audio: '/hls/split/audio/index.m3u8',
      stream: 'merge',
    },
  ],
  [
    'hlsMaster',
    'auto',
    'max',
    {
      url: '/hls/split/1080p/index.m3u8',
      kind: 'video',
      height: 1080,
      hasAudio: true,
      audio: '/hls/split/audio/index.m3u8',
      stream: 'merge',
    },
  ],
  [
    'hlsMaster',
    'auto',
    '1080',
    {
      url: '/hls/split/1080p/index.m3u8',
      kind: 'video',
      height: 1080,
      hasAudio: true,
      audio: '/hls/split/audio/index.m3u8',
      stream: 'merge',
    },
  ],
  [
    'hlsMaster',
    'auto',
    '720',
    {
      url: '/hls/split/720p/index.m3u8',
      kind: 'video',
      height: 720,
      hasAudio: true,
      audio: '/hls/split/audio/index.m3u8',
      stream: 'merge',
    },
  ],
  [
    'hlsMaster',
    'auto',
    '480',
    {
      url: '/hls/split/480p/index.m3u8',
      kind: 'video',
      height: 480,
      hasAudio: true,
      audio: '/hls/split/audio/index.m3u8',
      stream: 'merge',
    },
  ],
  ['hlsMaster', 'audio', '720', { url: '/hls/split/audio/index.m3u8', kind: 'audio', height: null, hasAudio: true }],
  ['hlsMaster', 'mute', '720', { url: '/hls/split/720p/index.m3u8', kind: 'video', height: 720, hasAudio: false, audio: null }],
  ['hlsMuxed', 'auto', '720', { url: '/hls/muxed/720p/index.m3u8', kind: 'video', height: 720, hasAudio: true, audio: null }],
  ['hlsMuxed', 'auto', '480', { url: '/hls/muxed/480p/index.m3u8', kind: 'video', height: 480, hasAudio: true }],
  ['hlsMuxed', 'mute', '720', { url: '/hls/muxed/720p/index.m3u8', kind: 'video', height: 720, hasAudio: false, stream: 'mute' }],
  ['hlsMuxed', 'audio', '720', { url: '/hls/muxed/720p/index.m3u8', kind: 'audio', height: null, stream: 'audio:best' }],
  ['hlsNoCodecs', 'auto', '720', { url: '/hls/nocodecs/720p/index.m3u8', kind: 'video', height: 720, hasAudio: true }], // probed
  ['hlsNoCodecs', 'mute', '480', { url: '/hls/nocodecs/480p/index.m3u8', kind: 'video', height: 480, stream: 'mute' }], // probed: both have sound
  ['hlsMedia', 'auto', '720', { url: '/hls/single/index.m3u8', kind: 'video', height: 720, hasAudio: true }],

  [
    'dash',
    'auto',
    'max',
    {
      url: '/dash/single/manifest-stream0.mp4',
      kind: 'video',
      height: 1080,
      hasAudio: true,
      audio: '/dash/single/manifest-stream3.mp4',
      stream: 'merge',
    },
  ],
  [
    'dash',
    'auto',
    '720',
    {
      url: '/dash/single/manifest-stream1.mp4',
      kind: 'video',
      height: 720,
      hasAudio: true,
      audio: '/dash/single/manifest-stream3.mp4',
      stream: 'merge',
    },
  ],
  [
    'dash',
    'auto',
    '480',
    {
      url: '/dash/single/manifest-stream2.mp4',
      kind: 'video',
      height: 480,
      hasAudio: true,
      audio: '/dash/single/manifest-stream3.mp4',
      stream: 'merge',
    },
  ],
  ['dash', 'audio', '720', { url: '/dash/single/manifest-stream3.mp4', kind: 'audio', height: null, hasAudio: true }],
  ['dash', 'mute', '720', { url: '/dash/single/manifest-stream1.mp4', kind: 'video', height: 720, hasAudio: false, audio: null }],
  // Segmented representations have no URL of their own: the manifest is the answer.
  ['dashSegmented', 'auto', '720', { url: '/dash/segmented/manifest.mpd', kind: 'video', height: null, hasAudio: true }],
  ['dashSegmented', 'mute', '720', { url: '/dash/segmented/manifest.mpd', kind: 'video', height: null, hasAudio: false, stream: 'mute' }],
  ['dashSegmented', 'audio', '720', { url: '/dash/segmented/manifest.mpd', kind: 'audio', height: null, stream: 'audio:best' }],

  ['mp4', 'auto', '720', { url: '/media/av-720.mp4', kind: 'video', height: 720, hasAudio: true }], // probed
  ['mp4', 'mute', '720', { url: '/media/av-720.mp4', kind: 'video', height: 720, hasAudio: false, stream: 'mute' }],
  ['mp4', 'audio', '720', { url: '/media/av-720.mp4', kind: 'audio', height: null, hasAudio: true, stream: 'audio:best' }],
  ['silentMp4', 'auto', '720', { url: '/media/v-480.mp4', kind: 'video', height: 480, hasAudio: false }],
  ['silentMp4', 'audio', '480', noAudio],
  ['silentMp4', 'mute', '480', { url: '/media/v-480.mp4', kind: 'video', height: 480, hasAudio: false }],
  ['mp3', 'auto', '720', { url: '/media/audio.mp3', kind: 'audio', height: null, hasAudio: true }],
  ['mp3', 'audio', '720', { url: '/media/audio.mp3', kind: 'audio', height: null, hasAudio: true }],
  ['mp3', 'mute', '720', noSilent],

  ['gallery', 'auto', '720', { url: '/media/v-720.mp4', kind: 'video', height: 720, items: 4 }],
  ['gallery', 'audio', '720', { url: '/media/av-480.mp4', kind: 'audio', height: null, items: 0, stream: 'audio:best' }], // the loud clip
  // Both clips: the quiet one as it is, the loud one without its sound (the stream of items[1]).
  ['gallery', 'mute', '720', { url: '/media/v-720.mp4', kind: 'video', height: 720, hasAudio: false, items: 2 }],
];

const FORMAT = 'url kind container width height bitrate codecs durationSeconds hasAudio hasVideo expiresAt headers delivery';
const PARSE = `mutation($input: ParseInput!) { parse(input: $input) {
  id status provider media { ${FORMAT} audio { ${FORMAT} } } alternatives { ${FORMAT} }
  items { ${FORMAT} title cover { url } alternatives { url } } itemsTotal
  cover { url } metadata { title durationSeconds } credits { charged balance } } }`;

const DATABASES = TEST_DATABASES;

describe.each(DATABASES)('parse matrix (%s database)', (database) => {
  let h: Harness;
  let site: FakeSite;

  beforeAll(async () => {
    site = await startFakeSite();
    await serveLibrary(site);
    for (const [kind, html] of Object.entries(PAGES)) site.page(TARGETS[kind], html(site.origin));
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort }, undefined, { database });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await site?.close();
  });

  const path = (url: string | null | undefined) => (url ? new URL(url).pathname : null);
  const tokens = new StreamTokens(TEST_PEPPER);

  /** The body both doors answer, checked against one cell. */
  function check(body: ParseBody, expect_: Success) {
    expect(body.status).toBe('SUCCEEDED');
    if (expect_.stream) {
      // The gateway's stream: its sealed token names the source and what is done to it.
      expect(body.media.delivery).toBe('stream');
      const grant = tokens.open(path(body.media.url)!.replace('/api/streams/', ''));
      expect({ source: path(grant?.sources[0].url), processing: grant?.processing }).toEqual({
        source: expect_.url,
        processing: expect_.stream,
      });
    } else {
      expect(body.media.delivery).toBe('direct');
      expect(path(body.media.url)).toBe(expect_.url);
    }
    expect(body.media.kind).toBe(expect_.kind);
    expect(body.media.height).toBe(expect_.height);
    if (expect_.hasAudio !== undefined) expect(body.media.hasAudio).toBe(expect_.hasAudio);
    if (expect_.audio !== undefined) expect(path(body.media.audio?.url)).toBe(expect_.audio);
    if (expect_.items !== undefined) {
      expect(body.items).toHaveLength(expect_.items);
      expect(body.itemsTotal).toBe(expect_.items);
    }
    expect(body.credits).toEqual({ charged: 1, balance: 2 });
  }

  it.each(CELLS)('%s, mode %s, quality %s', async (kind, mode, quality, expectation) => {
    const input = { url: site.origin + TARGETS[kind], mode, quality };
    const viaRest = await h.account({ credits: 3 });
    const viaGql = await h.account({ credits: 3 });
    const rest = await h.rest('/api/parse', input, viaRest.key);
    const gql = await h.gql<{ parse: ParseBody }>(PARSE, { input }, viaGql.key);
    if ('error' in expectation) {
      expect(rest.statusCode).toBe(422);
      expect(rest.json<ErrorBody>().error.code).toBe(expectation.error);
      if (expectation.message) expect(rest.json<ErrorBody>().error.message).toMatch(expectation.message);
      expect(gql.errors?.[0].extensions.code).toBe(expectation.error);
      expect(gql.errors?.[0].message).toBe(rest.json<ErrorBody>().error.message);
      // Refused: nothing charged, nothing held, the ledger still sums.
      for (const a of [viaRest, viaGql]) {
        expect(await h.balance(a.accountId)).toEqual({ available: 3, held: 0 });
        expect(await h.ledgerSums(a.accountId)).toEqual({ available: 3, held: 0 });
      }
      return;
    }
    expect(rest.statusCode).toBe(200);
    expect(gql.errors).toBeUndefined();
    check(parseBody(rest), expectation);
    check(gql.data.parse, expectation);
    // The same answer through both doors, but for the job id.
    const { id: _r, ...restBody } = parseBody(rest);
    const { id: _g, ...gqlBody } = gql.data.parse;
    // A stream URL names its job and expires from its own parse: the rest is the same.
    const same = ({ url, expiresAt, ...m }: Record<string, unknown>, streamed: boolean) => (streamed ? m : { url, expiresAt, ...m });
    const streamed = restBody.media.delivery === 'stream';
    expect(same(gqlBody.media, streamed)).toEqual(
      same(restBody.media.audio === undefined ? { ...restBody.media, audio: null } : restBody.media, streamed),
    );
    expect(gqlBody.itemsTotal).toBe(restBody.itemsTotal);
    for (const a of [viaRest, viaGql]) {
      expect(await h.balance(a.accountId)).toEqual({ available: 2, held: 0 });
      expect(await h.ledgerSums(a.accountId)).toEqual({ available: 2, held: 0 });
    }
  });
});
