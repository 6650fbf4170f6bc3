import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FakeSite } from '../fakes/site.fake.js';
import { TEST_PEPPER, type Harness } from '../support/harness.js';
import { StreamTokens } from '../../src/modules/streams/stream-token.js';
import { transcriptionWorld, type TranscriptionWorld } from '../support/world.js';
import { type ParseBody, parseBody } from '../support/bodies.js';

/** Pages written as real sites send them to a browser (see test/fixtures/pages/real-world/README.md). */
interface RealWorldPage {
  file: string;
  site: string;
  expect: { url: string; kind: 'video' | 'audio'; title: string; cover: string | null; items: number; expectHlsVariantHeight?: number };
  decoys?: string[];
}

const DIR = join(process.cwd(), 'test/fixtures/pages/real-world');
const PAGES: RealWorldPage[] = JSON.parse(readFileSync(join(DIR, 'expected.json'), 'utf8'));
const FIELDS = 'url kind height hasAudio delivery';
const PARSE = `mutation($input: ParseInput!) { parse(input: $input) {
  media { ${FIELDS} audio { url } } alternatives { url } items { url kind title } itemsTotal
  cover { url } metadata { title } credits { charged balance } } }`;

describe('the built-in reader on real-world pages', () => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;

  beforeAll(async () => {
    // Its transcription providers stay idle: these parses need only the world's site and gateway.
    const pages = Object.fromEntries(PAGES.map((p) => [`/rw/${p.file}`, join(DIR, p.file)]));
    world = await transcriptionWorld({ library: true, pagesFromDisk: pages, queue: false });
    ({ h, site } = world);
  }, 60_000);
  afterAll(() => world?.close());

  const path = (url: string | null | undefined) => (url ? new URL(url, site.origin).pathname : null);
  const tokens = new StreamTokens(TEST_PEPPER);
  /** The source's path: the URL itself, or what the gateway's stream URL stands for (a video joined with its separate track). */
  const source = (f: { url: string; delivery: string }) =>
    f.delivery === 'stream' ? path(tokens.open(path(f.url)!.replace('/api/streams/', ''))?.sources[0].url) : path(f.url);

  it.each(PAGES.map((p) => [p.file, p] as const))('%s resolves to what a person expects', async (_file, page) => {
    const input = { url: `${site.origin}/rw/${page.file}`, quality: '1080' };
    const a = await h.account({ credits: 2 });
    const b = await h.account({ credits: 2 });
    const rest = await h.rest('/api/parse', input, a.key);
    expect(rest.statusCode).toBe(200);
    const gql = await h.gql<{ parse: ParseBody }>(PARSE, { input }, b.key);
    expect(gql.errors).toBeUndefined();
    for (const body of [parseBody(rest), gql.data.parse]) {
      const chosen = source(body.media)!;
      if (page.expect.expectHlsVariantHeight) {
        // The page names the master; the answer is its variant at the asked height, the master an alternative.
        expect(chosen.startsWith(path(page.expect.url)!.replace(/master\.m3u8$/, ''))).toBe(true);
        expect(body.media.height).toBe(page.expect.expectHlsVariantHeight);
        expect(body.alternatives.map((x: { url: string }) => path(x.url))).toContain(page.expect.url);
      } else {
        expect(chosen).toBe(page.expect.url);
      }
      expect(body.media.kind).toBe(page.expect.kind);
      expect(body.metadata.title).toBe(page.expect.title);
      expect(path(body.cover?.url)).toBe(page.expect.cover);
      expect(body.items).toHaveLength(page.expect.items);
      expect(body.itemsTotal).toBe(page.expect.items);
      for (const decoy of page.decoys ?? []) {
        expect(chosen.startsWith(decoy)).toBe(false);
        for (const item of body.items) expect(path(item.url)!.startsWith(decoy)).toBe(false);
      }
      expect(body.credits).toEqual({ charged: 1, balance: 1 });
    }
  });
});
