import type { ServerResponse } from 'node:http';
import type { FakeSite } from '../fakes/site.fake.js';
import type { Harness, TestResponse } from '../support/harness.js';
import { transcriptionWorld, type TranscriptionWorld } from '../support/world.js';
import { waitFor } from '../support/wait-for.js';
import { type ErrorBody, transcriptionBody } from '../support/bodies.js';

/**
 * The temporary disk under transcriptions: a hostile site serves media that names no length and
 * trickles (100 kB, then nothing until the test lets go), so each download must reserve
 * MEDIA_MAX_BYTES before its first byte. Budgets are small so the bounds are met in a test.
 */
const MEDIA_MAX_BYTES = 1_000_000;
const TEMP_MAX_BYTES = 2_900_000;
const TRICKLE = 100_000;

const TRANSCRIBE = 'mutation($i: TranscribeInput!) { transcribe(input: $i) { id credits { charged } } }';

describe('the temporary disk under transcriptions', () => {
  let world: TranscriptionWorld;
  let site: FakeSite;
  let h: Harness;
  /** The trickling answers the site holds open. */
  const held: ServerResponse[] = [];

  beforeAll(async () => {
    world = await transcriptionWorld({
      site: { keepAliveTimeoutMs: 60_000 },
      media: [{ path: '/short.mp3', seconds: 4 }],
      env: {
        MEDIA_MAX_BYTES: String(MEDIA_MAX_BYTES),
        TEMP_MAX_BYTES: String(TEMP_MAX_BYTES),
        TEMP_MAX_DOWNLOADS: '3',
        TRANSCRIBE_MAX_PER_ACCOUNT: '2',
      },
      queue: false,
    });
    ({ h, site } = world);
    site.route('/trickle.ts', (_req, res) => {
      // Chunked, no Content-Length: the gateway cannot know how large it will be.
      res.writeHead(200, { 'content-type': 'video/mp2t' });
      res.write(Buffer.alloc(TRICKLE, 0x47));
      held.push(res);
    });
  });
  afterAll(async () => {
    for (const res of held.splice(0)) res.destroy();
    await world?.close();
  });

  /** Lets every held answer end (what it sent is not media): their transcriptions fail. */
  const letGo = () => {
    for (const res of held.splice(0)) if (!res.destroyed) res.end();
  };
  const trickling = (n: number) => waitFor(() => held.length === n, { describe: `${n} trickling downloads` });

  it('answers an account past its concurrent transcriptions 429 with Retry-After, on both doors, and a failed task consumes nothing', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const first = [
      h.rest('/api/transcribe', { mediaUrl: `${site.origin}/trickle.ts` }, key),
      h.rest('/api/transcribe', { mediaUrl: `${site.origin}/trickle.ts` }, key),
    ];
    await trickling(2);
    expect(await h.balance(accountId)).toEqual({ available: 8, held: 2 });

    const third = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/short.mp3` }, key);
    expect(third.statusCode).toBe(429);
    expect(third.headers['retry-after']).toMatch(/^\d+$/);
    expect(third.json<ErrorBody>().error).toMatchObject({
      code: 'RATE_LIMITED',
      details: { retryAfterSeconds: Number(third.headers['retry-after']), limit: 2 },
    });
    const viaGraphql = await h.gql(TRANSCRIBE, { i: { mediaUrl: `${site.origin}/short.mp3` } }, key);
    expect(viaGraphql.errors?.[0].extensions).toMatchObject({ code: 'RATE_LIMITED', details: { limit: 2 } });
    // Refused before any hold: still the two in flight.
    expect(await h.balance(accountId)).toEqual({ available: 8, held: 2 });

    // Another account is not held back by this one's limit.
    const other = await h.account({ credits: 5 });
    const elsewhere = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/short.mp3` }, other.key);
    expect(elsewhere.statusCode).toBe(200);

    letGo();
    const failed: TestResponse[] = await Promise.all(first);
    expect(failed.map((r) => [r.statusCode, r.json<ErrorBody>().error.code])).toEqual([
      [422, 'NO_MEDIA_FOUND'],
      [422, 'NO_MEDIA_FOUND'],
    ]);
    expect(await h.balance(accountId)).toEqual({ available: 10, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 10, held: 0 });
    // With its slots back, the account transcribes again.
    const again = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/short.mp3` }, key);
    expect(again.statusCode).toBe(200);
    expect(h.services.transcription.tempUsage()).toMatchObject({ bytes: 0, downloads: 0 });
  });

  it('keeps the process within its temporary-disk budget: a download that names no length reserves MEDIA_MAX_BYTES first; past the budget, 503 with Retry-After, free', async () => {
    const accounts = await Promise.all([1, 2, 3, 4].map(() => h.account({ credits: 5 })));
    const trickles = accounts.slice(0, 2).map((a) => h.rest('/api/transcribe', { mediaUrl: `${site.origin}/trickle.ts` }, a.key));
    await trickling(2);
    // Two unknown lengths hold 2 MB of the 2.9 MB; a third cannot have its megabyte.
    expect(h.services.transcription.tempUsage()).toMatchObject({ bytes: 2 * MEDIA_MAX_BYTES, downloads: 2 });
    const refused = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/trickle.ts` }, accounts[2].key);
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(refused.json<ErrorBody>().error).toMatchObject({ code: 'PROVIDER_UNAVAILABLE' });
    const viaGraphql = await h.gql(TRANSCRIBE, { i: { mediaUrl: `${site.origin}/trickle.ts` } }, accounts[2].key);
    expect(viaGraphql.errors?.[0].extensions.code).toBe('PROVIDER_UNAVAILABLE');
    expect(await h.balance(accounts[2].accountId)).toEqual({ available: 5, held: 0 });
    // The refused downloads were dropped at their headers, before a byte was written: the gateway hung up on both.
    expect(h.services.transcription.tempUsage()).toMatchObject({ bytes: 2 * MEDIA_MAX_BYTES, downloads: 2 });
    await waitFor(() => held.length === 4 && held.filter((r) => r.destroyed).length === 2, { describe: 'the refused answers dropped' });

    // Media that names its length reserves just that, and its audio as it is written: it fits beside them.
    const small = await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/short.mp3` }, accounts[3].key);
    expect(small.statusCode).toBe(200);
    expect(transcriptionBody(small).credits.charged).toBe(1);

    letGo();
    await Promise.all(trickles);
    for (const a of accounts) expect(await h.balance(a.accountId)).toEqual({ available: a === accounts[3] ? 4 : 5, held: 0 });
    const usage = h.services.transcription.tempUsage();
    // Measured: the most the budget ever held, against its limit; and nothing is left behind.
    expect(usage.peakBytes).toBeLessThanOrEqual(TEMP_MAX_BYTES);
    expect(usage.peakBytes).toBeGreaterThanOrEqual(2 * MEDIA_MAX_BYTES);
    expect(usage).toMatchObject({ bytes: 0, downloads: 0, waiting: 0 });
  });
});
