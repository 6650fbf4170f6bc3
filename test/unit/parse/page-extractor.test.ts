import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { extractPage } from '../../../src/providers/parse/page-extractor.js';
import { isoDurationSeconds } from '../../../src/providers/parse/jsonld.extractor.js';

const fixture = (name: string) => readFileSync(join(process.cwd(), 'test/fixtures/pages', name), 'utf8');

describe('extractPage', () => {
  it('reads Open Graph (secure URL preferred, player pages skipped) and the Twitter player stream', () => {
    const page = extractPage(fixture('og-twitter.html'), 'https://clipper.example/v/skate');
    expect(page.formats).toEqual([
      expect.objectContaining({ url: 'https://media.clipper.example/skate-1080.mp4', kind: 'video', container: 'mp4', width: 1920, height: 1080 }),
      expect.objectContaining({ url: 'https://media.clipper.example/skate-480.mp4', kind: 'video', container: 'mp4', width: 854, height: 480 }),
    ]);
    expect(page.images).toEqual([{ url: 'https://img.clipper.example/skate.jpg', width: 1280, height: 720 }]);
    expect(page.metadata).toEqual({
      title: 'Skate park session',
      author: '@rider',
      durationSeconds: 42,
      publishedAt: '2026-05-05T12:00:00Z',
      description: 'Filmed at dawn.',
      site: 'Clipper',
    });
  });

  it('reads JSON-LD nested in @graph, skips broken blocks and resolves against <base>', () => {
    const page = extractPage(fixture('jsonld-graph.html'), 'https://kitchen.example/articles/pasta');
    expect(page.formats).toEqual([
      expect.objectContaining({ url: 'https://cdn.kitchen.example/assets/videos/pasta_720p.mp4', kind: 'video', container: 'mp4', width: 1280, height: 720 }),
    ]);
    expect(page.images.map((i) => i.url)).toEqual([
      'https://cdn.kitchen.example/assets/videos/pasta-thumb.jpg',
      'https://img.kitchen.example/pasta-2.jpg',
    ]);
    expect(page.metadata).toMatchObject({
      title: 'Cooking pasta in 90 seconds',
      author: 'Chef Ana, Bo',
      durationSeconds: 90.5,
      publishedAt: '2026-03-01T08:00:00Z',
      description: 'Salt the water.',
      site: 'kitchen.example',
    });
  });

  it('reads <audio> sources and og:audio, ignoring javascript: URLs', () => {
    const page = extractPage(fixture('podcast.html'), 'https://radio.example/ep/12');
    expect(page.formats.map((f) => [f.url, f.kind, f.container, f.hasVideo])).toEqual([
      ['https://radio.example/episodes/12.mp3', 'audio', 'mp3', false],
      ['https://radio.example/episodes/12.ogg', 'audio', 'ogg', false],
    ]);
    expect(page.metadata).toMatchObject({ title: 'Episode 12: Rivers', author: 'River Radio' });
  });

  it('reads <video><source> sizes and the poster', () => {
    const html = `<video poster="/p.jpg"><source src="/v/a.webm" type="video/webm" res="720"><source src="/v/b.mp4" label="1080p"><source src="/v/c.m3u8" type="application/x-mpegURL"></video>`;
    const page = extractPage(html, 'https://s.example/watch');
    expect(page.formats.map((f) => [f.url, f.container, f.height])).toEqual([
      ['https://s.example/v/a.webm', 'webm', 720],
      ['https://s.example/v/b.mp4', 'mp4', 1080],
      ['https://s.example/v/c.m3u8', 'm3u8', null],
    ]);
    expect(page.images).toEqual([{ url: 'https://s.example/p.jpg', width: null, height: null }]);
  });

  it('finds nothing on a page without media', () => {
    const page = extractPage('<html><head><title>Hi</title></head><body><img src="/a.png"></body></html>', 'https://x.example/');
    expect(page.formats).toEqual([]);
    expect(page.metadata.title).toBe('Hi');
  });

  it.each([
    ['PT1M30.5S', 90.5],
    ['PT2H', 7200],
    ['P1DT1S', 86401],
    ['PT0S', 0],
    ['95', 95],
    ['soon', null],
    ['PT', null],
  ])('reads the ISO-8601 duration %s', (text, seconds) => {
    expect(isoDurationSeconds(text)).toBe(seconds);
  });
});

describe('decodeHtml', () => {
  it('honours the declared charset in the header or in <meta>', async () => {
    const { decodeHtml } = await import('../../../src/providers/parse/builtin.adapter.js');
    const latin1 = Buffer.from('<title>Café crème</title>', 'latin1');
    expect(decodeHtml(latin1, 'text/html; charset=ISO-8859-1')).toBe('<title>Café crème</title>');
    const meta = Buffer.concat([Buffer.from('<meta charset="windows-1252"><title>'), Buffer.from([0x93]), Buffer.from('hi'), Buffer.from([0x94]), Buffer.from('</title>')]);
    expect(decodeHtml(meta, 'text/html')).toContain('\u201chi\u201d');
    expect(decodeHtml(Buffer.from('<p>naïve</p>'), 'text/html')).toBe('<p>naïve</p>');
    expect(decodeHtml(Buffer.from('<p>x</p>'), 'text/html; charset=no-such-charset')).toBe('<p>x</p>');
  });
});
