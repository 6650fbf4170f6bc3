import { writeFileSync } from 'node:fs';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, type Harness } from '../support/harness.js';
import { serveLibrary } from '../support/media-library.js';
import type { ParseBody, ErrorBody } from '../support/bodies.js';

/** What one hostile parse cost the gateway: wall time, and the process's peak RSS and heap above where they started. */
interface Cost {
  page: string;
  ms: number;
  rssMiB: number;
  heapMiB: number;
}

const MiB = 1024 * 1024;
const costs: Cost[] = [];

/** Runs a request while sampling the process's memory every few milliseconds. */
async function measured<T>(page: string, run: () => Promise<T>): Promise<T> {
  const start = process.memoryUsage();
  let rss = start.rss;
  let heap = start.heapUsed;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    rss = Math.max(rss, m.rss);
    heap = Math.max(heap, m.heapUsed);
  }, 2);
  const t = performance.now();
  try {
    return await run();
  } finally {
    clearInterval(timer);
    const m = process.memoryUsage();
    costs.push({
      page,
      ms: Math.round(performance.now() - t),
      rssMiB: Math.round((Math.max(rss, m.rss) - start.rss) / MiB),
      heapMiB: Math.round((Math.max(heap, m.heapUsed) - start.heapUsed) / MiB),
    });
  }
}

const html = (body: string) => `<!DOCTYPE html><html><head><title>Hostile</title></head><body>${body}</body></html>`;
/** About 3.9 MB of nesting in the three places JSON hides, and no media in any of it. */
const NESTS = [
  `<script id="__NEXT_DATA__" type="application/json">${'{"a":'.repeat(300_000)}1${'}'.repeat(300_000)}</script>`,
  `<div class="video-js" data-setup='${'['.repeat(400_000)}${']'.repeat(400_000)}'></div>`,
  `<script>window.__INITIAL_STATE__ = {"s":${'[{"x":'.repeat(150_000)}0${'}]'.repeat(150_000)}};</script>`,
].join('\n');
const link = (href: string, text = 'Download') => `<a download href="${href}">${text}</a>`;

describe('hostile pages that hide media', () => {
  let h: Harness;
  let site: FakeSite;
  let elsewhere: FakeSite;

  beforeAll(async () => {
    site = await startFakeSite();
    elsewhere = await startFakeSite();
    await serveLibrary(site);
    const text = (path: string, type: string, body: string) =>
      site.route(path, (_req, res) => res.writeHead(200, { 'content-type': type }).end(body));
    const pageHtml = html('<p>Not a video, whatever the name says.</p>');
    text('/text/page.mp4', 'text/html; charset=utf-8', pageHtml);
    text('/text/data.mp4', 'application/json', '{"error":"not found","status":404}');
    text('/text/liar.mp4', 'video/mp4', pageHtml);
    // A page over the in-process reader's first read, from a server that ignores Range: ffprobe's turn.
    text('/text/big-liar.mp4', 'video/mp4', html(`<p>${'Lorem ipsum dolor sit amet. '.repeat(3000)}</p>`));
    const nobody = `127.0.0.1:${new URL(elsewhere.origin).port}`;
    const pages: Record<string, string> = {
      nested: html(NESTS),
      'nested-then-link': html(`${NESTS}${link('/media/av-720.mp4')}`),
      links: html(Array.from({ length: 5000 }, (_, i) => link(`/junk/${i}.mp4`, `Download part ${i}`)).join('\n')),
      text: html(['/text/page.mp4', '/text/data.mp4', '/text/liar.mp4'].map((u) => link(u)).join('')),
      'big-text': html(link('/text/big-liar.mp4')),
      'dead-manifest': html(link('/junk/master.m3u8', 'Download the stream')),
      'text-then-media': html(['/text/page.mp4', '/text/liar.mp4', '/media/av-720.mp4'].map((u) => link(u)).join('')),
      private: html(
        [`http://localhost:${nobody.split(':')[1]}/a.mp4`, `http://127.0.0.2:${nobody.split(':')[1]}/b.mp4`].map((u) => link(u)).join(''),
      ),
      'private-then-media': html(
        [`http://localhost:${nobody.split(':')[1]}/a.mp4`, `http://[::1]:${nobody.split(':')[1]}/b.mp4`, '/media/av-720.mp4']
          .map((u) => link(u))
          .join(''),
      ),
    };
    for (const [name, body] of Object.entries(pages)) site.page(`/hostile/${name}.html`, body);
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort });
  }, 60_000);
  afterAll(async () => {
    if (process.env.HIDDEN_MEASURE) writeFileSync(process.env.HIDDEN_MEASURE, JSON.stringify(costs, null, 2));
    await h?.close();
    await site?.close();
    await elsewhere?.close();
  });

  const url = (name: string) => `${site.origin}/hostile/${name}.html`;
  const path = (u: string) => new URL(u).pathname;

  /** The parse fails with 422 NO_MEDIA_FOUND through both doors, in bounded time, and charges nothing. */
  async function refused(name: string): Promise<void> {
    const { key, accountId } = await h.account({ credits: 2 });
    const started = performance.now();
    const rest = await measured(name, () => h.rest('/api/parse', { url: url(name) }, key));
    expect(performance.now() - started).toBeLessThan(5000);
    expect(rest.statusCode).toBe(422);
    expect(rest.json<ErrorBody>().error.code).toBe('NO_MEDIA_FOUND');
    const gql = await h.gql('mutation($u: String!) { parse(input: { url: $u }) { media { url } } }', { u: url(name) }, key);
    expect(gql.errors?.[0]?.extensions?.code).toBe('NO_MEDIA_FOUND');
    expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 2, held: 0 });
  }

  /** The parse succeeds through both doors with this file, charged once on each. */
  async function resolved(name: string, file: string): Promise<void> {
    const { key, accountId } = await h.account({ credits: 3 });
    const rest = await measured(name, () => h.rest('/api/parse', { url: url(name) }, key));
    expect(rest.statusCode).toBe(200);
    expect(path(rest.json<ParseBody>().media.url)).toBe(file);
    expect(rest.json<ParseBody>().credits).toEqual({ charged: 1, balance: 2 });
    const gql = await h.gql<{ parse: ParseBody }>(
      'mutation($u: String!) { parse(input: { url: $u }) { media { url height } credits { charged } } }',
      { u: url(name) },
      key,
    );
    expect(gql.errors).toBeUndefined();
    expect(path(gql.data.parse.media.url)).toBe(file);
    expect(gql.data.parse.credits.charged).toBe(1);
    expect(await h.balance(accountId)).toEqual({ available: 1, held: 0 });
  }

  it('megabytes of nested JSON in a script, a data-setup and app state: bounded work, 422, nothing charged', async () => {
    await refused('nested');
  });

  it('a real download link beside the nests still counts', async () => {
    await resolved('nested-then-link', '/media/av-720.mp4');
  });

  it('five thousand download links: a few are read, then 422, nothing charged', async () => {
    const before = site.hits.length;
    await refused('links');
    const read = new Set(site.hits.slice(before).filter((hit) => hit.includes('/junk/')));
    // PROBE_MAX_CANDIDATES (3) per parse, two parses.
    expect(read.size).toBeLessThanOrEqual(3);
    expect([...read].every((hit) => /\/junk\/[0-2]\.mp4$/.test(hit))).toBe(true);
  });

  it('text served as .mp4 (an HTML page, JSON, HTML labelled video/mp4) is never media: 422, nothing charged', async () => {
    await refused('text');
  });

  it('HTML labelled video/mp4 from a server that ignores Range is not media either', async () => {
    await refused('big-text');
  });

  it('a hidden link to a manifest that is not there is no media (not content that cannot be had)', async () => {
    await refused('dead-manifest');
  });

  it('after links to text, a link to real media is the answer', async () => {
    await resolved('text-then-media', '/media/av-720.mp4');
  });

  it('links to loopback addresses are never fetched: 422 alone, passed over beside real media', async () => {
    await refused('private');
    await resolved('private-then-media', '/media/av-720.mp4');
    expect(elsewhere.connections).toBe(0);
  });
});
