import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, type Harness } from '../support/harness.js';
import { mediaLibrary } from '../support/media-library.js';
import { TEST_DATABASES } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';
import type { ParseBody } from '../support/bodies.js';
import { PROBED_PARSE, type Door } from '../support/parse-doors.js';

/**
 * Ordinary pages (og:video with a plain type, nothing of size or length) through both doors: the
 * media is read in process over Range requests, once however many parses want it at a time, and
 * kept a while; a page that states what the answer needs is not read at all. Hostile media (a
 * trickle, a moov box claiming gigabytes, a file that is not media, a redirect to a private
 * address in the middle of the read) is cut in time and bytes: the parse succeeds with the
 * media's details null, charged once.
 */

const PROBE_MAX_BYTES = 1024 * 1024;
const PROBE_TIMEOUT_SECONDS = 2;
/** Time a cut read may add to a parse, beyond the read's own limit (the database's statements, on a busy machine). */
const SLACK_MS = 5000;
interface Answer {
  status: string;
  media: {
    url: string;
    kind: string;
    width: number | null;
    height: number | null;
    durationSeconds: number | null;
    codecs: string | null;
    hasAudio: boolean | null;
  };
  credits: { charged: number; balance: number };
}

/** What one media URL's server saw: every request's Range header and the bytes it sent. */
interface Served {
  ranges: (string | undefined)[];
  bytes: number;
}

/** 206 for `bytes=a-b` (or 200 whole), counting what goes out, as a CDN serves a file. */
function serveRange(req: IncomingMessage, res: ServerResponse, body: Buffer, served: Served, type = 'video/mp4'): void {
  served.ranges.push(req.headers.range);
  const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
  if (!m) {
    served.bytes += body.length;
    return void res.writeHead(200, { 'content-type': type, 'content-length': body.length }).end(body);
  }
  const start = Number(m[1]);
  const end = Math.min(m[2] ? Number(m[2]) : body.length - 1, body.length - 1);
  const part = body.subarray(start, end + 1);
  served.bytes += part.length;
  res
    .writeHead(206, { 'content-type': type, 'content-length': part.length, 'content-range': `bytes ${start}-${end}/${body.length}` })
    .end(part);
}

const box = (type: string, payload: Buffer) => {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + payload.length);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, payload]);
};

describe.each(TEST_DATABASES)('media read in process (%s database)', (database) => {
  let h: Harness;
  let site: FakeSite;
  let hidden: Server;
  let hiddenConnections = 0;
  let avMp4: Buffer;
  let page = 0;

  beforeAll(async () => {
    site = await startFakeSite();
    const library = await mediaLibrary();
    avMp4 = readFileSync(library.files['/media/av-720.mp4'].path); // moov after the media data, as ffmpeg writes it
    // A server at a private address nothing may reach: a redirect there must not connect.
    hidden = createServer((_req, res) => res.end('secret'));
    hidden.on('connection', () => void hiddenConnections++);
    await new Promise<void>((r) => hidden.listen(0, '127.0.0.2', r));
    h = await createHarness(
      { FETCH_ALLOW_HOSTS: site.hostPort, PROBE_MAX_BYTES: String(PROBE_MAX_BYTES), PROBE_TIMEOUT_SECONDS: String(PROBE_TIMEOUT_SECONDS) },
      undefined,
      { database },
    );
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await site?.close();
    await new Promise<void>((r) => (hidden ? hidden.close(() => r()) : r()));
  });

  /** An ordinary page of its own naming `mediaUrl`: og:video, a plain type, nothing else. */
  const ordinaryPage = (mediaUrl: string, tag = 'og:video', type = 'video/mp4') => {
    const path = `/page/${++page}`;
    site.page(
      path,
      `<html><head><title>Clip</title><meta property="${tag}" content="${mediaUrl}"><meta property="${tag}:type" content="${type}"></head></html>`,
    );
    return site.origin + path;
  };

  /** One parse through one door, by an account of its own with 3 credits (made first, or now); the ledger checked after. */
  async function parse(door: Door, url: string, account?: { key: string; accountId: string }): Promise<Answer> {
    const { key, accountId } = account ?? (await h.account({ credits: 3 }));
    let answer: Answer;
    if (door === 'rest') {
      const res = await h.rest('/api/parse', { url }, key);
      expect(res.statusCode).toBe(200);
      answer = res.json();
    } else {
      const res = await h.gql<{ parse: ParseBody }>(PROBED_PARSE, { input: { url } }, key);
      expect(res.errors).toBeUndefined();
      answer = res.data.parse;
    }
    expect(answer.status).toBe('SUCCEEDED');
    // Charged once, nothing held, the entries summing to the balance.
    expect(answer.credits).toEqual({ charged: 1, balance: 2 });
    expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 2, held: 0 });
    return answer;
  }

  /** The media read counters, as /metrics shows them. */
  async function counters(): Promise<Record<string, number>> {
    const text = (await h.request('GET', '/metrics')).body;
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^mediagate_media_read(?:s|_reuses)_total\{(?:reader="(\w+)",outcome="(\w+)"|how="(\w+)")\} (\d+)/gm)) {
      out[m[3] ? `reuse ${m[3]}` : `${m[1]} ${m[2]}`] = Number(m[4]);
    }
    return out;
  }
  const delta = (before: Record<string, number>, after: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(after)
        .filter(([k, v]) => v !== (before[k] ?? 0))
        .map(([k, v]) => [k, v - (before[k] ?? 0)]),
    );

  const unread = { width: null, height: null, durationSeconds: null, codecs: null, hasAudio: null };

  it.each(['rest', 'graphql'] as const)('reads an ordinary page’s media in process, over ranges, through %s', async (door) => {
    const served: Served = { ranges: [], bytes: 0 };
    site.route(`/media/${door}/clip.mp4`, (req, res) => serveRange(req, res, avMp4, served));
    const before = await counters();
    const answer = await parse(door, ordinaryPage(`${site.origin}/media/${door}/clip.mp4`));
    expect(answer.media).toMatchObject({ kind: 'video', width: 1280, height: 720, durationSeconds: 2, codecs: 'h264,aac', hasAudio: true });
    expect(delta(before, await counters())).toEqual({ 'in_process read': 1 });
    // The first block, then the moov box at the end: never the whole file.
    expect(served.ranges.every((r) => /^bytes=\d+-\d+$/.test(r ?? ''))).toBe(true);
    expect(served.ranges).toHaveLength(2);
    expect(served.bytes).toBeLessThan(avMp4.length / 2);
  });

  it('reads an MP3 and a WebM in process too', async () => {
    const library = await mediaLibrary();
    const before = await counters();
    for (const [file, tag, type, expected] of [
      ['/media/audio.mp3', 'og:audio', 'audio/mpeg', { kind: 'audio', codecs: 'mp3', hasAudio: true, height: null }],
      ['/media/av-720.webm', 'og:video', 'video/webm', { kind: 'video', codecs: 'vp9,opus', hasAudio: true, height: 720 }],
    ] as const) {
      const served: Served = { ranges: [], bytes: 0 };
      const body = readFileSync(library.files[file].path);
      site.route(`/own${file}`, (req, res) => serveRange(req, res, body, served, type));
      const answer = await parse('rest', ordinaryPage(`${site.origin}/own${file}`, tag, type));
      expect(answer.media).toMatchObject(expected);
      expect(answer.media.durationSeconds).toBeCloseTo(2, 0);
      expect(served.ranges.every((r) => r !== undefined)).toBe(true);
    }
    expect(delta(before, await counters())).toEqual({ 'in_process read': 2 });
  });

  it('shares one read among the parses that want the same media at the same time, and keeps its answer', async () => {
    const served: Served = { ranges: [], bytes: 0 };
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    site.route('/media/shared.mp4', (req, res) => void released.then(() => serveRange(req, res, avMp4, served)));
    const mediaUrl = `${site.origin}/media/shared.mp4`;
    const before = await counters();
    // Six parses of six pages naming one file, three through each door; the file answers once all wait on it.
    const doors: Door[] = ['rest', 'graphql', 'rest', 'graphql', 'rest', 'graphql'];
    const accounts: { key: string; accountId: string }[] = [];
    for (const _ of doors) accounts.push(await h.account({ credits: 3 }));
    const parses = doors.map((door, i) => parse(door, ordinaryPage(mediaUrl), accounts[i]));
    await waitFor(
      async () => {
        const now = await counters();
        if (now['reuse in_flight'] !== (before['reuse in_flight'] ?? 0) + 5)
          throw new Error(`the read counters are ${JSON.stringify(now)}`);
        return true;
      },
      { describe: 'the parses to share the read', interval: 10 },
    );
    release();
    for (const answer of await Promise.all(parses))
      expect(answer.media).toMatchObject({ height: 720, durationSeconds: 2, codecs: 'h264,aac', hasAudio: true });
    expect(served.ranges).toHaveLength(2); // one read's requests
    // Later, the kept answer: no request at all.
    const again = await parse('graphql', ordinaryPage(mediaUrl));
    expect(again.media).toMatchObject({ height: 720, durationSeconds: 2 });
    expect(served.ranges).toHaveLength(2);
    expect(delta(before, await counters())).toEqual({ 'in_process read': 1, 'reuse in_flight': 5, 'reuse cache': 1 });
  });

  it('does not read the media of a page that states what the answer needs', async () => {
    const served: Served = { ranges: [], bytes: 0 };
    site.route('/media/stated.mp4', (req, res) => serveRange(req, res, avMp4, served));
    const path = `/page/stated`;
    site.page(
      path,
      `<html><head><meta property="og:video" content="${site.origin}/media/stated.mp4">
      <meta property="og:video:type" content='video/mp4; codecs="avc1.64001f, mp4a.40.2"'><meta property="og:video:height" content="720">
      <meta property="video:duration" content="2"></head></html>`,
    );
    for (const door of ['rest', 'graphql'] as const)
      expect((await parse(door, site.origin + path)).media).toMatchObject({ height: 720, hasAudio: true });
    expect(served.ranges).toEqual([]);
  });

  describe('hostile media: cut in time and bytes, the parse succeeds without the media’s details, charged once', () => {
    it.each(['rest', 'graphql'] as const)('a server that trickles bytes (%s)', async (door) => {
      let sent = 0;
      site.route(`/media/${door}/trickle.mp4`, (_req, res) => {
        res.writeHead(206, { 'content-type': 'video/mp4', 'content-length': 16384, 'content-range': 'bytes 0-16383/1000000' });
        const timer = setInterval(() => {
          sent++;
          res.write(Buffer.from([0]));
        }, 20);
        res.on('close', () => clearInterval(timer));
      });
      const before = await counters();
      const started = Date.now();
      const answer = await parse(door, ordinaryPage(`${site.origin}/media/${door}/trickle.mp4`));
      const elapsed = Date.now() - started;
      expect(answer.media).toMatchObject(unread);
      // At 20 ms a byte the first block alone would take five minutes.
      expect(elapsed).toBeLessThan(PROBE_TIMEOUT_SECONDS * 1000 + SLACK_MS);
      expect(sent).toBeLessThan(((PROBE_TIMEOUT_SECONDS * 1000 + SLACK_MS) / 20) * 1.5);
      expect(delta(before, await counters())).toEqual({ 'in_process failed': 1 });
    });

    it.each(['rest', 'graphql'] as const)('a moov box claiming gigabytes (%s)', async (door) => {
      // ftyp, then a moov whose 64-bit size says 5 GiB, in a file that claims 6 GiB: any range answered.
      const ftyp = box('ftyp', Buffer.from('isom\0\0\x02\0isomiso2avc1mp41', 'latin1'));
      const moov = Buffer.alloc(16);
      moov.writeUInt32BE(1);
      moov.write('moov', 4, 'latin1');
      moov.writeBigUInt64BE(5n * 2n ** 30n, 8);
      const head = Buffer.concat([ftyp, moov, box('mvhd', Buffer.alloc(100))]);
      const claimed = 6 * 2 ** 30;
      let sent = 0;
      site.route(`/media/${door}/huge.mp4`, (req, res) => {
        const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
        if (!m) return void res.writeHead(416, { 'content-range': `bytes */${claimed}` }).end();
        const [start, end] = [Number(m[1]), Math.min(Number(m[2]), claimed - 1)];
        const part = Buffer.alloc(end - start + 1);
        if (start < head.length) head.copy(part, 0, start);
        sent += part.length;
        res
          .writeHead(206, {
            'content-type': 'video/mp4',
            'content-length': part.length,
            'content-range': `bytes ${start}-${end}/${claimed}`,
          })
          .end(part);
      });
      const before = await counters();
      const started = Date.now();
      const answer = await parse(door, ordinaryPage(`${site.origin}/media/${door}/huge.mp4`));
      expect(answer.media).toMatchObject(unread);
      expect(Date.now() - started).toBeLessThan(PROBE_TIMEOUT_SECONDS * 1000 + SLACK_MS);
      expect(sent).toBeLessThanOrEqual(PROBE_MAX_BYTES);
      expect(delta(before, await counters())).toEqual({ 'in_process failed': 1 });
    });

    it.each(['rest', 'graphql'] as const)('a file that is not media (%s)', async (door) => {
      // An error page served as video: text, which no container ffprobe may open is, so ffprobe is not started.
      const html = Buffer.from(`<!doctype html><html><body>${'Not found. '.repeat(5000)}</body></html>`);
      const noise = randomBytes(256 * 1024);
      const served: Served = { ranges: [], bytes: 0 };
      site.route(`/media/${door}/page.mp4`, (req, res) => serveRange(req, res, html, served));
      site.route(`/media/${door}/noise.mp4`, (req, res) => serveRange(req, res, noise, served));
      let before = await counters();
      expect((await parse(door, ordinaryPage(`${site.origin}/media/${door}/page.mp4`))).media).toMatchObject(unread);
      expect(delta(before, await counters())).toEqual({ 'in_process failed': 1 });
      // Bytes that are no container the in-process reader knows: ffprobe has its turn, within what is left.
      before = await counters();
      expect((await parse(door, ordinaryPage(`${site.origin}/media/${door}/noise.mp4`))).media).toMatchObject(unread);
      expect(delta(before, await counters())).toEqual({ 'ffprobe failed': 1 });
      expect(served.bytes).toBeLessThanOrEqual(html.length + PROBE_MAX_BYTES);
    });

    it.each(['rest', 'graphql'] as const)('a redirect to a private address in the middle of a range read (%s)', async (door) => {
      const served: Served = { ranges: [], bytes: 0 };
      const target = `http://127.0.0.2:${(hidden.address() as AddressInfo).port}/media.mp4`;
      // The first block as asked; the next part (the moov box at the end) redirected inside.
      site.route(`/media/${door}/turn.mp4`, (req, res) => {
        if (/^bytes=0-/.test(req.headers.range ?? '')) return serveRange(req, res, avMp4, served);
        served.ranges.push(req.headers.range);
        res.writeHead(302, { location: target }).end();
      });
      const before = await counters();
      const connections = hiddenConnections;
      const answer = await parse(door, ordinaryPage(`${site.origin}/media/${door}/turn.mp4`));
      expect(answer.media).toMatchObject(unread);
      expect(served.ranges).toHaveLength(2);
      expect(hiddenConnections).toBe(connections);
      expect(delta(before, await counters())).toEqual({ 'in_process failed': 1 });
    });
  });
});
