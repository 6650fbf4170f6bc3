import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { cachedPath } from '../support/fixture-cache.js';
import { createHarness, type Harness } from '../support/harness.js';
import {
  bigMoovMp4,
  counterDelta,
  holding,
  padMoov,
  probeFigures,
  served,
  videoPage,
  type ProbeFigures,
} from '../support/hostile-media.js';
import { mediaLibrary } from '../support/media-library.js';
import { TEST_DATABASES } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';
import type { ParseBody, EitherDoorBody } from '../support/bodies.js';
import { PROBED_PARSE, type Door } from '../support/parse-doors.js';

/**
 * What media probes may spend, through both doors, against real servers: one part loaded into
 * memory at most PROBE_MAX_PART_BYTES (a larger moov box, a larger HLS segment, is read by ffprobe
 * as a stream, with nothing of the in-process read held meanwhile); every probe's bytes counted
 * against PROBE_MEMORY_BYTES, whose peak /metrics shows; probes at once capped per process and per
 * account; a probe without its share skipped at once (the parse goes on: 200 with the details null,
 * or 422 NO_MEDIA_FOUND for a silent format nothing confirms, charged nothing); an MPEG-TS file,
 * which the in-process reader reads end to end, fetched in tens of requests, not hundreds.
 */

const KiB = 1024;
const PART = 512 * KiB;
const MEMORY = 2048 * KiB;
// Long enough for an MPEG-TS file read end to end on a busy machine; the held probes wait all of it.
const PROBE_TIMEOUT_SECONDS = 5;
interface Answer {
  status: number;
  code?: string;
  media?: { kind: string; height: number | null; durationSeconds: number | null; codecs: string | null; hasAudio: boolean | null };
  credits?: { charged: number; balance: number };
}

const unread = { height: null, durationSeconds: null, codecs: null, hasAudio: null };

/** A 60-second MPEG-TS file made by ffmpeg (about 4 MB), once per machine. */
async function mpegTs(): Promise<Buffer> {
  const path = await cachedPath(join(tmpdir(), 'mediagate-probe-budget-60s-v1.ts'), async (partial) => {
    await promisify(execFile)(process.env.FFMPEG_PATH ?? 'ffmpeg', [
      ...['-hide_banner', '-loglevel', 'error', '-nostdin', '-y'],
      ...['-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25:duration=60', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=60'],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-b:v', '450k', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-ac', '1'],
      ...['-f', 'mpegts', partial],
    ]);
  });
  return readFileSync(path);
}

describe.each(TEST_DATABASES)('probe budget (%s database)', (database) => {
  let h: Harness;
  let site: FakeSite;
  let page = 0;

  beforeAll(async () => {
    site = await startFakeSite();
    h = await createHarness(
      {
        FETCH_ALLOW_HOSTS: site.hostPort,
        PROBE_MAX_PART_BYTES: String(PART),
        PROBE_MEMORY_BYTES: String(MEMORY),
        PROBE_CONCURRENCY: '4',
        PROBE_MAX_PER_ACCOUNT: '2',
        PROBE_TIMEOUT_SECONDS: String(PROBE_TIMEOUT_SECONDS),
      },
      undefined,
      { database },
    );
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await site?.close();
  });
  afterEach(async () => {
    // Every probe over and its bytes given back: what one test holds never counts in the next.
    await waitFor(
      async () => {
        const now = await figures();
        return now.running === 0 && now.memoryBytes === 0;
      },
      { describe: 'no probe running', timeout: 20_000 },
    );
  });

  const figures = async (): Promise<ProbeFigures> => probeFigures((await h.request('GET', '/metrics')).body);

  /** A page of its own naming the media URLs, each in a <video>. */
  const pageOf = (urls: string[], type?: string) => {
    const path = `/page/${++page}`;
    site.page(path, videoPage(urls, type));
    return site.origin + path;
  };

  /** One parse through one door; the ledger checked against what was charged. */
  async function parse(door: Door, url: string, mode: string, account: { key: string; accountId: string }): Promise<Answer> {
    const before = await h.balance(account.accountId);
    let answer: Answer;
    if (door === 'rest') {
      const res = await h.rest('/api/parse', { url, mode }, account.key);
      const body = res.json<EitherDoorBody<ParseBody>>();
      answer =
        res.statusCode === 200
          ? { status: 200, media: body.media, credits: body.credits }
          : { status: res.statusCode, code: body.error?.code };
    } else {
      const res = await h.gql<{ parse: ParseBody }>(PROBED_PARSE, { input: { url, mode } }, account.key);
      answer = res.errors
        ? { status: res.errors[0].extensions.code === 'NO_MEDIA_FOUND' ? 422 : 500, code: res.errors[0].extensions.code }
        : { status: 200, media: res.data.parse.media, credits: res.data.parse.credits };
    }
    const charged = answer.status === 200 ? 1 : 0;
    if (answer.status === 200) expect(answer.credits).toEqual({ charged: 1, balance: before.available - 1 });
    expect(await h.balance(account.accountId)).toEqual({ available: before.available - charged, held: 0 });
    expect(await h.ledgerSums(account.accountId)).toEqual({ available: before.available - charged, held: 0 });
    return answer;
  }

  it.each(['rest', 'graphql'] as const)(
    'reads a moov box over the part cap with ffprobe, holding nothing of the in-process read meanwhile (%s)',
    async (door) => {
      const library = await mediaLibrary();
      // A real clip whose moov box is padded past the part cap: the in-process reader may not load it.
      const clip = padMoov(readFileSync(library.files['/media/av-720.mp4'].path), PART + 64 * KiB);
      const seen = served();
      const duringFfprobe: ProbeFigures[] = [];
      site.route(`/big-moov/${door}.mp4`, (req, res) => {
        // A request without a closed range is ffprobe's, through the relay: what the budget holds while it reads.
        if (!/^bytes=\d+-\d+$/.test(req.headers.range ?? '') && !duringFfprobe.length) {
          return void figures().then((f) => {
            duringFfprobe.push(f);
            holding(clip, seen, { wholeUpTo: Number.POSITIVE_INFINITY })(req, res);
          });
        }
        holding(clip, seen, { wholeUpTo: Number.POSITIVE_INFINITY })(req, res);
      });
      const before = await figures();
      const answer = await parse(door, pageOf([`${site.origin}/big-moov/${door}.mp4`]), 'auto', await h.account({ credits: 3 }));
      expect(answer.media).toMatchObject({ kind: 'video', height: 720, codecs: 'h264,aac', hasAudio: true });
      expect(answer.media?.durationSeconds).toBeCloseTo(2, 0);
      expect(counterDelta(before.reads, (await figures()).reads)).toEqual({ 'ffprobe read': 1 });
      // ffprobe ran as the one probe, its in-process reader's bytes all given back before it started.
      expect(duringFfprobe).toHaveLength(1);
      expect(duringFfprobe[0]).toMatchObject({ running: 1, ffprobes: 1, memoryBytes: 0 });
      // The in-process reader asked for no part over the cap (its ranges are closed; ffprobe's are open).
      for (const range of seen.ranges) {
        const m = /^bytes=(\d+)-(\d+)$/.exec(range ?? '');
        if (m) expect(Number(m[2]) - Number(m[1]) + 1).toBeLessThanOrEqual(PART);
      }
    },
    30_000,
  );

  it('skips the probes past the byte budget at once, and never holds more than it (REST and GraphQL)', async () => {
    // Moov boxes under the part cap, sent but their last byte and held: each probe holds its part until its deadline.
    const moov = bigMoovMp4(480 * KiB);
    const seen = served();
    for (let i = 0; i < 3; i++) site.route(`/held/${i}.mp4`, holding(moov, seen));
    const before = await figures();
    expect(before.limitBytes).toBe(MEMORY);
    // Account A, mode mute: two candidates read at once, holding nearly all the budget.
    const a = await h.account({ credits: 3 });
    const muted = parse('rest', pageOf([`${site.origin}/held/0.mp4`, `${site.origin}/held/1.mp4`]), 'mute', a);
    await waitFor(async () => (await figures()).memoryBytes > MEMORY - 200 * KiB, { describe: 'the two reads to hold their parts' });
    // Account B meanwhile: its probe cannot have its part, so it is skipped and the parse answers at once, without the details.
    const started = Date.now();
    const b = await parse('graphql', pageOf([`${site.origin}/held/2.mp4`]), 'auto', await h.account({ credits: 3 }));
    expect(Date.now() - started).toBeLessThan(PROBE_TIMEOUT_SECONDS * 1000);
    expect(b).toMatchObject({ status: 200, media: { kind: 'video', ...unread } });
    // A's probes run out of time: no silent format is known, so no media, and nothing charged.
    expect(await muted).toEqual({ status: 422, code: 'NO_MEDIA_FOUND' });
    const after = await figures();
    expect(counterDelta(before.skipped, after.skipped)).toEqual({ bytes: 1 });
    expect(after.peakBytes).toBeGreaterThan(MEMORY / 2);
    expect(after.peakBytes).toBeLessThanOrEqual(MEMORY);
  }, 30_000);

  it('caps the probes running at once per account and per process; a probe past either is skipped, not waited for', async () => {
    // Servers that answer nothing: each probe holds its slot until its deadline.
    const seen = served();
    for (let i = 0; i < 6; i++) site.route(`/silent/${i}.mp4`, holding(Buffer.alloc(0), seen, { hold: 'all' }));
    const urls = (from: number) => [0, 1, 2].map((k) => `${site.origin}/silent/${from + k}.mp4`);
    const before = await figures();
    // A (REST) may run two of its three candidates; B (GraphQL) two more, which fills the process.
    const a = parse('rest', pageOf(urls(0)), 'mute', await h.account({ credits: 3 }));
    await waitFor(() => seen.held === 2, { describe: 'A’s two probes to run' });
    const b = parse('graphql', pageOf(urls(3)), 'mute', await h.account({ credits: 3 }));
    await waitFor(() => seen.held === 4, { describe: 'B’s two probes to run' });
    expect((await figures()).running).toBe(4);
    // C's ordinary page, through each door: no slot, so no probe, and the answer comes at once.
    const library = await mediaLibrary();
    site.fileFromDisk('/plain/clip.mp4', library.files['/media/av-720.mp4'].path, 'video/mp4');
    const c = await h.account({ credits: 3 });
    for (const door of ['rest', 'graphql'] as const) {
      const started = Date.now();
      expect(await parse(door, pageOf([`${site.origin}/plain/clip.mp4`]), 'auto', c)).toMatchObject({
        status: 200,
        media: { kind: 'video', ...unread },
      });
      expect(Date.now() - started).toBeLessThan(PROBE_TIMEOUT_SECONDS * 1000);
    }
    expect(await a).toEqual({ status: 422, code: 'NO_MEDIA_FOUND' });
    expect(await b).toEqual({ status: 422, code: 'NO_MEDIA_FOUND' });
    expect(seen.held).toBe(4);
    // A's third (its account's cap), B's third and C's two (the process's).
    expect(counterDelta(before.skipped, (await figures()).skipped)).toEqual({ account: 1, probes: 3 });
    // With slots free again, the same page is read.
    expect(await parse('rest', pageOf([`${site.origin}/plain/clip.mp4`]), 'auto', c)).toMatchObject({
      status: 200,
      media: { kind: 'video', height: 720, codecs: 'h264,aac', hasAudio: true },
    });
  }, 40_000);

  it.each(['rest', 'graphql'] as const)(
    'reads an MPEG-TS file end to end in tens of requests, not hundreds (%s)',
    async (door) => {
      const ts = await mpegTs();
      const seen = served();
      site.route(`/ts/${door}.ts`, holding(ts, seen, { wholeUpTo: Number.POSITIVE_INFINITY, type: 'video/mp2t' }));
      const before = await figures();
      const answer = await parse(door, pageOf([`${site.origin}/ts/${door}.ts`], 'video/mp2t'), 'auto', await h.account({ credits: 3 }));
      expect(answer.media).toMatchObject({ kind: 'video', height: 240, codecs: 'h264,aac', hasAudio: true });
      expect(answer.media?.durationSeconds).toBeCloseTo(60, 0);
      expect(counterDelta(before.reads, (await figures()).reads)).toEqual({ 'in_process read': 1 });
      // About 4 MB: in 16 KiB blocks it took 242 requests; doubling to the cap, a dozen or so.
      expect(ts.length).toBeGreaterThan(3_500_000);
      expect(seen.ranges.length).toBeLessThanOrEqual(20);
      expect((await figures()).peakBytes).toBeLessThanOrEqual(MEMORY);
    },
    60_000,
  );

  it.each(['rest', 'graphql'] as const)(
    'streams an HLS first segment over the part cap to ffprobe instead of holding it (%s)',
    async (door) => {
      const ts = await mpegTs();
      const seen = served();
      site.route(`/hls/${door}/first.ts`, holding(ts, seen, { wholeUpTo: Number.POSITIVE_INFINITY, type: 'video/mp2t' }));
      site.route(`/hls/${door}/index.m3u8`, (_req, res) =>
        res
          .writeHead(200, { 'content-type': 'application/vnd.apple.mpegurl' })
          .end('#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:60\n#EXTINF:60.0,\nfirst.ts\n#EXT-X-ENDLIST\n'),
      );
      const before = await figures();
      const answer = await parse(door, `${site.origin}/hls/${door}/index.m3u8`, 'auto', await h.account({ credits: 3 }));
      expect(answer.media).toMatchObject({ kind: 'video', height: 240, codecs: 'h264,aac', hasAudio: true, durationSeconds: 60 });
      expect(counterDelta(before.reads, (await figures()).reads)).toEqual({ 'ffprobe read': 1 });
      // Never more than the cap of it in memory: the whole-segment read stopped at the cap.
      expect((await figures()).peakBytes).toBeLessThanOrEqual(MEMORY);
    },
    60_000,
  );
});
