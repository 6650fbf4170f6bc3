import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { join } from 'node:path';
import { mediaInScript, scanLiteral } from '../../../src/providers/parse/embedded-json.reader.js';
import { HIDDEN_LIMITS } from '../../../src/providers/parse/hidden-media.extractor.js';
import { extractPage } from '../../../src/providers/parse/page-extractor.js';

const ORIGIN = 'https://site.example';
const page = (file: string) =>
  extractPage(
    readFileSync(join(process.cwd(), 'test/fixtures/pages/hidden', file), 'utf8').replaceAll('{{origin}}', ORIGIN),
    `${ORIGIN}/p`,
  );
const urls = (file: string) => page(file).items.map((i) => i.formats.map((f) => f.url.replace(ORIGIN, '')));
const budget = () => ({ ...HIDDEN_LIMITS });

describe('media a page hides', () => {
  it('finds it where real pages put it, in the order it is trusted', () => {
    expect(urls('podcast-download-link.html')).toEqual([
      ['/media/audio.mp3?dl=1'],
      ['/episodes/111/hl-111.mp3'],
      ['/episodes/110/hl-110.mp3'],
    ]);
    expect(urls('nextjs-next-data.html')).toEqual([['/media/av-1080.mp4', '/media/av-720.mp4', '/streams/v_88213/master.m3u8']]);
    expect(urls('videojs-data-setup.html')).toEqual([['/media/av-720.mp4', '/media/av-480.mp4']]);
    expect(urls('amp-article.html')).toEqual([['/media/av-1080.mp4', '/media/av-720.webm']]);
    // The two pages' clips share a stem (av-720, av-480), so they read as renditions of one media.
    expect(urls('amp-story.html')).toEqual([['/media/av-720.mp4', '/media/av-480.mp4'], ['/media/audio.mp3']]);
    expect(urls('spa-initial-state.html')).toEqual([['/media/audio.m4a'], ['/ads/midroll-spot.mp3']]);
    for (const file of ['podcast-download-link.html', 'nextjs-next-data.html', 'amp-story.html', 'spa-initial-state.html'])
      expect(page(file).hidden).toBe(true);
  });

  it('reads JSON-LD in CDATA sections as declared media, not hidden', () => {
    const p = page('cdata-jsonld.html');
    expect(p.hidden).toBe(false);
    expect(p.formats.map((f) => f.url)).toEqual([`${ORIGIN}/media/av-720.mp4`]);
    expect(p.items[0].title).toBe('Sheepdog trials at Bala, 1974');
  });

  it('keeps the kinds, types and labels the JSON states', () => {
    const [item] = page('nextjs-next-data.html').items;
    expect(item.formats.map((f) => [f.kind, f.container, f.height])).toEqual([
      ['video', 'mp4', 1080],
      ['video', 'mp4', 720],
      ['video', 'm3u8', null],
    ]);
    expect(page('spa-initial-state.html').items[0].formats[0]).toMatchObject({ kind: 'audio', container: 'm4a' });
  });

  it('never looks past what the page declares in its players and tags', () => {
    const html = `<meta property="og:video" content="${ORIGIN}/a.mp4"><a download href="/b.mp4">Download</a>`;
    const p = extractPage(html, `${ORIGIN}/p`);
    expect(p.hidden).toBe(false);
    expect(p.formats.map((f) => f.url)).toEqual([`${ORIGIN}/a.mp4`]);
  });

  it('spends a bounded effort on hostile JSON: deep nests are scanned, never parsed; the scan stops at its budget', () => {
    // A nest deeper than MAX_JSON_DEPTH is never handed to JSON.parse: its strings are scanned.
    const deep = `${'['.repeat(1_000_000)}"/x.mp4"${']'.repeat(1_000_000)}`;
    let started = performance.now();
    expect(mediaInScript(deep, true, budget(), '').map((m) => m.url)).toEqual(['/x.mp4']);
    expect(performance.now() - started).toBeLessThan(1000);
    // Past the page's budget nothing is read: a URL behind 2.5 MB of brackets is not found.
    const deeper = `${'['.repeat(2_500_000)}"/x.mp4"${']'.repeat(2_500_000)}`;
    const b = budget();
    started = performance.now();
    expect(mediaInScript(deeper, true, b, '')).toEqual([]);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(b.chars).toBe(0);
    const closed = scanLiteral(`${'['.repeat(100)}"/y.mp4"${']'.repeat(100)}`, 0, budget());
    expect(closed).toMatchObject({ depth: 100, strings: ['/y.mp4'] });
    expect(mediaInScript(`${'['.repeat(100)}"/y.mp4"${']'.repeat(100)}`, true, budget(), '').map((m) => m.url)).toEqual(['/y.mp4']);
  });

  it('keeps at most HIDDEN_LIMITS.found URLs however many the page names', () => {
    const links = Array.from({ length: 5000 }, (_, i) => `<a download href="/junk/${i}.mp4">Download ${i}</a>`).join('\n');
    const started = performance.now();
    const p = extractPage(`<html><body>${links}</body></html>`, `${ORIGIN}/p`);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(p.formats).toHaveLength(HIDDEN_LIMITS.found);
    expect(p.formats[0].url).toBe(`${ORIGIN}/junk/0.mp4`);
  });

  it('skips ads, related clips and pictures in structured JSON, and schemes that are not http', () => {
    const json = JSON.stringify({
      ads: { src: '/ad.mp4' },
      related: [{ src: '/other.mp4' }],
      thumbnail: { url: '/t.mp4' },
      player: { file: 'javascript:alert(1).mp4', sources: [{ file: '/main.mp4', label: '720p' }, 'data:video/mp4,AAAA'] },
    });
    expect(mediaInScript(json, true, budget(), '').map((m) => [m.url, m.label])).toEqual([['/main.mp4', '720p']]);
  });

  it('reads the other shapes pages use: MediaObject JSON-LD, JSON.parse state, plain data- URLs, amp-audio, typed links', () => {
    const shapes = [
      `<script type="application/ld+json">{"@type":"PodcastEpisode","name":"Ep. 9","associatedMedia":{"@type":"MediaObject","contentUrl":"/ep9.mp3"}}</script>`,
      `<script>window.__STATE__ = JSON.parse('{"player":{"hls":"\\/live\\/master.m3u8"}}');</script>`,
      '<div class="player" data-video-url="/clip-720.mp4" data-poster="/p.jpg"></div>',
      '<amp-audio src="/radio.ogg" title="Radio"></amp-audio>',
      '<a href="/stream?id=7" type="audio/mpeg">Listen</a>',
      `<script>var player = {\n  // don't autoplay\n  file: '/talk.webm', /* or '/old.flv' */ next: null\n};</script>`,
    ];
    const found = (html: string) => extractPage(html, `${ORIGIN}/p`).formats.map((f) => [f.url.replace(ORIGIN, ''), f.kind, f.container]);
    expect(shapes.map(found)).toEqual([
      [['/ep9.mp3', 'audio', 'mp3']],
      [['/live/master.m3u8', 'video', 'm3u8']],
      [['/clip-720.mp4', 'video', 'mp4']],
      [['/radio.ogg', 'audio', 'ogg']],
      [['/stream?id=7', 'audio', 'mp3']],
      [['/talk.webm', 'video', 'webm']],
    ]);
  });

  it('never throws and never overspends, whatever the script or page holds', () => {
    const pieces = fc.constantFrom(
      '{',
      '}',
      '[',
      ']',
      '"',
      "'",
      '`',
      '\\',
      '/',
      '*',
      '//',
      '/*',
      '*/',
      ':',
      ',',
      '\n',
      'src',
      '"/a.mp4"',
      "'/b.mp3'",
      'window.__S__ = ',
      'var x = ',
      'JSON.parse(',
      ')',
      '<![CDATA[',
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(pieces, fc.string()), { maxLength: 60 }), fc.boolean(), (parts, isJson) => {
        const b = { chars: 200, nodes: 50, found: 3 };
        const found = mediaInScript(parts.join(''), isJson, b, '');
        expect(found.length).toBeLessThanOrEqual(3);
        expect(b.nodes).toBeGreaterThanOrEqual(0);
        expect(b.chars).toBeGreaterThanOrEqual(0);
        expect(b.found).toBeGreaterThanOrEqual(0);
        const page = extractPage(
          `<div data-setup='${parts.join('').replaceAll("'", '&#39;')}'></div><script>${parts.join('')}</script>`,
          `${ORIGIN}/p`,
        );
        expect(page.formats.length).toBeLessThanOrEqual(HIDDEN_LIMITS.found);
      }),
      { numRuns: 500, seed: 28 },
    );
  });
});
