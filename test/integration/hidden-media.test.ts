import { join } from 'node:path';
import type { FakeSite } from '../fakes/site.fake.js';
import type { Harness } from '../support/harness.js';
import { transcriptionWorld, type TranscriptionWorld } from '../support/world.js';
import { type ParseBody, parseBody } from '../support/bodies.js';

/** A page that names its media only where players and social tags do not, and what a person expects of it (mode auto, quality 1080). */
interface HiddenPage {
  file: string;
  url: string;
  kind: 'video' | 'audio';
  height: number | null;
  title: string;
  /** Paths the parse must never fetch (ads, other episodes, related clips). */
  untouched: string[];
}

const PAGES: HiddenPage[] = [
  {
    file: 'podcast-download-link.html',
    url: '/media/audio.mp3',
    kind: 'audio',
    height: null,
    title: 'Ep. 112: Lighthouse keepers of the north',
    untouched: ['/episodes/'],
  },
  {
    file: 'nextjs-next-data.html',
    url: '/media/av-1080.mp4',
    kind: 'video',
    height: 1080,
    title: 'How a tide mill grinds flour',
    untouched: ['/ads/', '/previews/', '/videos/'],
  },
  {
    file: 'videojs-data-setup.html',
    url: '/media/av-720.mp4',
    kind: 'video',
    height: 720,
    title: 'Sitzung 14: Haushaltsdebatte',
    untouched: [],
  },
  {
    file: 'cdata-jsonld.html',
    url: '/media/av-720.mp4',
    kind: 'video',
    height: 720,
    title: 'Sheepdog trials at Bala, 1974',
    untouched: [],
  },
  {
    file: 'amp-article.html',
    url: '/media/av-1080.mp4',
    kind: 'video',
    height: 1080,
    title: 'Ferry returns to island after 40-year gap',
    untouched: [],
  },
  {
    file: 'amp-story.html',
    url: '/media/av-720.mp4',
    kind: 'video',
    height: 720,
    title: 'Five minutes on a lifeboat shout',
    untouched: [],
  },
  {
    file: 'spa-initial-state.html',
    url: '/media/audio.m4a',
    kind: 'audio',
    height: null,
    title: 'Shipping forecast songs, live session',
    untouched: ['/ads/'],
  },
];

const DIR = join(process.cwd(), 'test/fixtures/pages/hidden');
const PARSE = `mutation($input: ParseInput!) { parse(input: $input) {
  media { url kind height hasAudio durationSeconds } alternatives { url } items { url } itemsTotal
  cover { url } metadata { title } credits { charged balance } } }`;

describe('the built-in reader on pages that hide their media', () => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;

  beforeAll(async () => {
    const pages = Object.fromEntries(PAGES.map((p) => [`/hidden/${p.file}`, join(DIR, p.file)]));
    world = await transcriptionWorld({ library: true, pagesFromDisk: pages, queue: false });
    ({ h, site } = world);
  }, 60_000);
  afterAll(() => world?.close());

  const path = (url: string | null | undefined) => (url ? new URL(url, site.origin).pathname : null);

  it.each(PAGES.map((p) => [p.file, p] as const))('%s: the media read from where the page hides it, charged once', async (_file, page) => {
    const input = { url: `${site.origin}/hidden/${page.file}`, quality: '1080' };
    const a = await h.account({ credits: 2 });
    const b = await h.account({ credits: 2 });
    const before = site.hits.length;
    const rest = await h.rest('/api/parse', input, a.key);
    expect(rest.statusCode).toBe(200);
    const gql = await h.gql<{ parse: ParseBody }>(PARSE, { input }, b.key);
    expect(gql.errors).toBeUndefined();
    for (const body of [parseBody(rest), gql.data.parse]) {
      expect(path(body.media.url)).toBe(page.url);
      expect(body.media.kind).toBe(page.kind);
      // Read, not guessed: the file's own size and length.
      expect(body.media.height).toBe(page.height);
      expect(body.media.durationSeconds).toBeGreaterThan(1);
      expect(body.metadata.title).toBe(page.title);
      expect(path(body.cover?.url)).toBe('/media/cover.jpg');
      expect(body.items).toEqual([]);
      expect(body.credits).toEqual({ charged: 1, balance: 1 });
    }
    for (const hit of site.hits.slice(before)) for (const prefix of page.untouched) expect(hit).not.toContain(` ${prefix}`);
    expect(await h.balance(a.accountId)).toEqual({ available: 1, held: 0 });
    expect(await h.balance(b.accountId)).toEqual({ available: 1, held: 0 });
  });

  it('gives the other renditions a hidden player lists as alternatives, picks by quality, and hears the mode', async () => {
    const { key } = await h.account({ credits: 2 });
    const res = await h.rest('/api/parse', { url: `${site.origin}/hidden/nextjs-next-data.html`, quality: '720' }, key);
    expect(res.statusCode).toBe(200);
    expect(path(res.json<ParseBody>().media.url)).toBe('/media/av-720.mp4');
    expect(res.json<ParseBody>().alternatives.map((x: { url: string }) => path(x.url))).toContain('/media/av-1080.mp4');
    const audio = await h.rest('/api/parse', { url: `${site.origin}/hidden/amp-story.html`, mode: 'audio' }, key);
    expect(audio.statusCode).toBe(200);
    // Asked for audio, the story's background track is its media.
    expect(path(audio.json<ParseBody>().media.url)).toBe('/media/audio.mp3');
    expect(audio.json<ParseBody>().media.kind).toBe('audio');
  });
});
