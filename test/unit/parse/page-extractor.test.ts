import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isoDurationSeconds } from '../../../src/providers/parse/jsonld.extractor.js';
import { heightHint } from '../../../src/providers/parse/media-types.js';
import { extractPage } from '../../../src/providers/parse/page-extractor.js';
import { mediaFormat, type MediaFormat } from '../../../src/providers/parse/parse.types.js';

const fixture = (name: string) => readFileSync(join(process.cwd(), 'test/fixtures/pages', name), 'utf8');

/** A video format as the extractor builds it: whether it has sound is unknown unless the page lists codecs. */
const video = (
  url: string,
  container: string | null,
  width: number | null,
  height: number | null,
  over: Partial<MediaFormat> = {},
): MediaFormat => mediaFormat({ url, kind: 'video', container, width, height, ...over });
const audio = (url: string, container: string): MediaFormat => mediaFormat({ url, kind: 'audio', container });

describe('extractPage on real-world page shapes', () => {
  it('Open Graph only: secure URLs win, structured properties attach to their og:video, player pages are skipped', () => {
    const page = extractPage(fixture('og-only.html'), 'https://peakfilms.example/videos/trail-run-glen-coe/');
    expect(page.formats).toEqual([
      video('https://media.peakfilms.example/2026/04/glencoe-1080.mp4', 'mp4', 1920, 1080),
      video('https://media.peakfilms.example/2026/04/glencoe.webm', 'webm', 1280, 720),
    ]);
    expect(page.images).toEqual([
      { url: 'https://peakfilms.example/wp-content/uploads/2026/04/glencoe-1280x720.jpg', width: 1280, height: 720 },
      { url: 'https://peakfilms.example/wp-content/uploads/2026/04/glencoe-square.jpg', width: null, height: null },
    ]);
    expect(page.metadata).toEqual({
      title: 'Trail run at Glen Coe & back',
      author: 'Isla Fraser',
      durationSeconds: 754,
      publishedAt: '2026-04-18T06:30:00+00:00',
      description: 'Twelve miles of ridge line, shot on a single battery.',
      site: 'Peak Films',
    });
  });

  it('Twitter player card: the stream (relative, entity-escaped) with the player size, title and creator', () => {
    const page = extractPage(fixture('twitter-card.html'), 'https://shorts.example/v/a9f3');
    // The card's content type lists an audio codec, so this one is known to have sound.
    expect(page.formats).toEqual([
      video('https://shorts.example/media/a9f3/stream.mp4?sig=Zm9v&exp=1790000000', 'mp4', 720, 1280, {
        codecs: 'avc1.42E01E1,mp4a.40.2',
        hasAudio: true,
      }),
    ]);
    expect(page.images).toEqual([{ url: 'https://static.shorts.example/thumbs/a9f3.jpg', width: null, height: null }]);
    expect(page.metadata).toEqual({
      title: 'Seals at the harbour wall',
      author: '@harbourcam',
      durationSeconds: null,
      publishedAt: null,
      description: 'Two grey seals, 6am, low tide.',
      site: 'shorts.example',
    });
  });

  it('JSON-LD: VideoObject nested in @graph → NewsArticle.video, inheriting author and date; logos are no cover', () => {
    const page = extractPage(fixture('jsonld-graph.html'), 'https://kitchen.example/articles/pasta');
    expect(page.formats).toEqual([
      video('https://video.kitchen.example/pasta/pasta.mp4', 'mp4', 1280, 720),
      video('https://video.kitchen.example/pasta/master.m3u8', 'm3u8', null, null),
    ]);
    expect(page.images).toEqual([
      { url: 'https://img.kitchen.example/pasta-thumb.jpg', width: null, height: null },
      { url: 'https://img.kitchen.example/pasta-thumb-2.jpg', width: 640, height: 360 },
      { url: 'https://img.kitchen.example/pasta-hero.jpg', width: 1600, height: 900 },
    ]);
    expect(page.metadata).toEqual({
      title: 'Cooking pasta in 90 seconds',
      author: 'Chef Ana, Bo',
      durationSeconds: 90.5,
      publishedAt: '2026-03-01T08:00:00Z',
      description: 'Salt the water.',
      site: 'kitchen.example',
    });
  });

  it('<video><source>: heights from size/res/label and URL paths; youtube, data-src and subtitle sources skipped', () => {
    const page = extractPage(fixture('video-sources.html'), 'https://streambox.example/watch/harbour');
    expect(page.formats).toEqual([
      video('https://streambox.example/media/harbour/harbour-2160.mp4', 'mp4', null, 2160),
      video('https://streambox.example/media/harbour/harbour-1080.mp4', 'mp4', null, 1080),
      video('https://streambox.example/media/harbour/harbour-hd.webm', 'webm', null, 720),
      video('https://streambox.example/media/harbour/harbour-hd.mp4', 'mp4', null, 720),
      video('https://cdn.streambox.example/v/480/harbour.mp4', 'mp4', null, 480),
      video('https://streambox.example/media/harbour/master.m3u8', 'm3u8', null, null),
      // A <video>'s width and height are its size on the page, not the media's.
      video('https://streambox.example/media/teaser.webm', 'webm', null, null),
    ]);
    // Two <video> elements are two media: the ladder (with its poster) and the teaser.
    expect(page.items.map((i) => [i.formats.length, i.cover?.url ?? null])).toEqual([
      [6, 'https://streambox.example/posters/harbour.jpg'],
      [1, null],
    ]);
    expect(page.images).toEqual([{ url: 'https://streambox.example/posters/harbour.jpg', width: null, height: null }]);
    expect(page.metadata).toEqual({
      title: 'Harbour timelapse - StreamBox',
      author: null,
      durationSeconds: null,
      publishedAt: null,
      description: null,
      site: 'streambox.example',
    });
  });

  it('audio-only podcast: og:audio, AudioObject and <audio> merged by URL; data: and javascript: URLs dropped', () => {
    const page = extractPage(fixture('podcast.html'), 'https://radio.example/ep/12');
    expect(page.formats).toEqual([
      audio('https://radio.example/episodes/12.mp3', 'mp3'),
      audio('https://radio.example/episodes/12.ogg', 'ogg'),
      audio('https://radio.example/episodes/12-extended.m4a', 'm4a'),
    ]);
    expect(page.images).toEqual([{ url: 'https://radio.example/art/show-3000.jpg', width: null, height: null }]);
    expect(page.metadata).toEqual({
      title: 'Episode 12: Rivers',
      author: 'River Radio',
      durationSeconds: 2527,
      publishedAt: '2026-02-14',
      description: 'Where the rivers go when the map runs out.',
      site: 'radio.example',
    });
  });

  it('a page without media: no formats, its picture, and no profile URL as author', () => {
    const page = extractPage(fixture('no-media.html'), 'https://bakery.example/tips');
    expect(page.formats).toEqual([]);
    expect(page.images).toEqual([{ url: 'https://bakery.example/img/loaf.jpg', width: null, height: null }]);
    expect(page.metadata).toEqual({
      title: 'Ten tips for better bread',
      author: null,
      durationSeconds: null,
      publishedAt: '2026-01-09T10:00:00Z',
      description: 'Flour, water, salt, patience.',
      site: 'bakery.example',
    });
  });

  it('broken JSON-LD is skipped, a CDATA block with raw newlines still read, relative URLs resolved against <base>', () => {
    const page = extractPage(fixture('broken-jsonld-base.html'), 'https://newsroom.example/story/8812');
    expect(page.formats).toEqual([
      video('https://static.newsroom.example/2026/story-8812/media/barrier_720p.mp4', 'mp4', null, 720),
      video('https://static.newsroom.example/2026/story-8812/media/barrier_1080p.mp4', 'mp4', null, 1080),
      video('https://media.newsroom.example/story-8812/barrier-480.mp4', 'mp4', null, 480),
      video('https://static.newsroom.example/2026/story-8812/media/barrier.mpd', 'mpd', null, null),
    ]);
    expect(page.images).toEqual([
      { url: 'https://static.newsroom.example/2026/shared/barrier-poster.jpg', width: null, height: null },
      { url: 'https://static.newsroom.example/thumbs/barrier.jpg', width: null, height: null },
    ]);
    expect(page.metadata).toEqual({
      title: 'Flood barrier test',
      author: 'Newsroom',
      durationSeconds: 242,
      publishedAt: '2026-06-01T09:15:00+01:00',
      description: 'The barrier rises in four minutes.',
      site: 'newsroom.example',
    });
  });
});

describe('extractPage details', () => {
  it('takes an og:video given only as secure_url, and og tags written with name= instead of property=', () => {
    const html = `<meta property="og:video:secure_url" content="https://m.example/a.mp4"><meta property="og:video:type" content="video/mp4">
      <meta property="og:video:height" content="540"><meta name="og:audio" content="https://m.example/a.m4a"><meta name="og:site_name" content="M">`;
    const page = extractPage(html, 'https://m.example/p');
    expect(page.formats).toEqual([video('https://m.example/a.mp4', 'mp4', null, 540), audio('https://m.example/a.m4a', 'm4a')]);
    expect(page.metadata.site).toBe('M');
  });

  it('lets a declared MIME type decide the kind, an .mp4 under <audio> stays audio, and JSON-LD encodingFormat "mp4" names the container', () => {
    const html = `<audio src="/ep.mp4"></audio><video><source src="/only-sound" type="audio/mpeg"></video>
      <script type="application/ld+json; charset=utf-8">{"@type":["VideoObject"],"contentUrl":"/v/download?id=9","encodingFormat":"mp4","height":1080}</script>`;
    const page = extractPage(html, 'https://x.example/watch');
    expect(page.formats).toEqual([
      video('https://x.example/v/download?id=9', 'mp4', null, 1080),
      audio('https://x.example/ep.mp4', 'm4a'),
      audio('https://x.example/only-sound', 'mp3'),
    ]);
  });

  it('ignores an unusable <base>, non-http URLs and media that are only images', () => {
    const html = `<base href="http://[bad"><meta property="og:video" content="ftp://x.example/a.mp4"><meta property="og:video" content="/pic.jpg">
      <video src="blob:https://x.example/1"></video><video src="clip.webm"></video>`;
    expect(extractPage(html, 'https://x.example/dir/page').formats).toEqual([video('https://x.example/dir/clip.webm', 'webm', null, null)]);
  });

  it.each([
    ['PT1M30.5S', 90.5],
    ['PT2H', 7200],
    ['P1DT1S', 86401],
    ['PT0S', 0],
    ['pt3m', 180],
    ['95', 95],
    [61.2, 61.2],
    ['soon', null],
    ['PT', null],
    ['P', null],
    ['P1DT', null],
  ])('reads the ISO-8601 duration %s as %s seconds', (text, seconds) => {
    expect(isoDurationSeconds(text)).toBe(seconds);
  });

  it.each([
    ['/v/clip_720p.mp4', 720],
    ['/media/1080/clip.mp4', 1080],
    ['/x/clip-480.mp4', 480],
    ['/x/1920x1080/c.mp4', 1080],
    ['1080p60', 1080],
    ['4K', 2160],
    ['/v/12345720.mp4', null],
    ['/2026/04/clip.mp4', null],
    ['HD', null],
  ])('reads the height hint in %s as %s', (text, height) => {
    expect(heightHint(text)).toBe(height);
  });
});

describe('decodeHtml', () => {
  it('honours the declared charset in the header or in <meta>', async () => {
    const { decodeHtml } = await import('../../../src/providers/parse/builtin.adapter.js');
    const latin1 = Buffer.from('<title>Café crème</title>', 'latin1');
    expect(decodeHtml(latin1, 'text/html; charset=ISO-8859-1')).toBe('<title>Café crème</title>');
    const meta = Buffer.concat([
      Buffer.from('<meta charset="windows-1252"><title>'),
      Buffer.from([0x93]),
      Buffer.from('hi'),
      Buffer.from([0x94]),
      Buffer.from('</title>'),
    ]);
    expect(decodeHtml(meta, 'text/html')).toContain('\u201chi\u201d');
    expect(decodeHtml(Buffer.from('<p>naïve</p>'), 'text/html')).toBe('<p>naïve</p>');
    expect(decodeHtml(Buffer.from('<p>x</p>'), 'text/html; charset=no-such-charset')).toBe('<p>x</p>');
  });
});

describe('extractPage on markup as browsers tolerate it', () => {
  it('reads upper-case tags and attributes, entities, the first of a repeated attribute, unclosed tags and a figure caption', () => {
    const html = `<!DOCTYPE html><HTML><HEAD><TITLE>  Tide &amp;
      Time </TITLE><BASE HREF="https://cdn.example/v/"><META PROPERTY="og:site_name" CONTENT="Harbour &quot;TV&quot;"></HEAD>
      <BODY><p>intro<figure><VIDEO POSTER="p.jpg" poster="ignored.jpg"><SOURCE SRC="tide-720.mp4?a=1&amp;b=2" TYPE="video/mp4" DATA-HEIGHT="720">
      <source src="tide-360.mp4" type="video/mp4" size="360"></VIDEO><figcaption> The   tide <b>turns</b> </figcaption></figure>
      <script type="text/javascript">var s = "<video src='not-media.mp4'>";</script>
      <div><audio src="/pod.mp3"></div>`;
    const page = extractPage(html, 'https://harbour.example/watch/1');
    expect(page.formats).toEqual([
      video('https://cdn.example/v/tide-720.mp4?a=1&b=2', 'mp4', null, 720),
      video('https://cdn.example/v/tide-360.mp4', 'mp4', null, 360),
      audio('https://cdn.example/pod.mp3', 'mp3'),
    ]);
    expect(page.items.map((i) => [i.title, i.cover?.url ?? null])).toEqual([
      ['The tide turns', 'https://cdn.example/v/p.jpg'],
      [null, null],
    ]);
    expect(page.metadata.title).toBe('Tide & Time');
    expect(page.metadata.site).toBe('Harbour "TV"');
  });
});
