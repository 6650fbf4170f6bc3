import { createHarness, type Harness } from '../support/harness.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { parseBody, type Connection, type ParseBody, type ErrorBody } from '../support/bodies.js';

const PAGE = (origin: string) => `<!doctype html>
<html><head>
  <title>Sunset over the bay</title>
  <meta property="og:title" content="Sunset over the bay">
  <meta property="og:site_name" content="Clips">
  <meta property="og:description" content="A short clip.">
  <meta property="og:image" content="${origin}/cover.jpg">
  <meta property="og:image:width" content="1280">
  <meta property="og:image:height" content="720">
</head><body>
  <video poster="${origin}/cover.jpg" controls>
    <source src="${origin}/media/clip-1080.mp4" type="video/mp4" size="1080">
    <source src="${origin}/media/clip-720.mp4" type="video/mp4" size="720">
    <source src="${origin}/media/clip-480.mp4" type="video/mp4" size="480">
  </video>
</body></html>`;

describe('parse', () => {
  let h: Harness;
  let site: FakeSite;

  beforeAll(async () => {
    site = await startFakeSite();
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort });
    site.page('/watch', PAGE(site.origin));
    site.page('/empty', '<html><head><title>Nothing here</title></head><body><p>text only</p></body></html>');
    site.route('/broken', (_req, res) => void res.writeHead(500).end('upstream exploded'));
  });
  afterAll(async () => {
    await h.close();
    await site.close();
  });

  it('resolves a page into direct media, charges one credit, and records the job', async () => {
    const { key, accountId } = await h.account({ credits: 5 });
    const res = await h.rest('/api/parse', { url: `${site.origin}/watch` }, key);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = parseBody(res);
    expect(body).toMatchObject({
      status: 'SUCCEEDED',
      url: `${site.origin}/watch`,
      mode: 'auto',
      quality: '1080',
      media: { url: `${site.origin}/media/clip-1080.mp4`, kind: 'video', container: 'mp4', height: 1080, hasVideo: true },
      cover: { url: `${site.origin}/cover.jpg` },
      metadata: { title: 'Sunset over the bay', site: 'Clips' },
      provider: 'builtin',
      credits: { charged: 1, balance: 4 },
    });
    expect(body.alternatives.map((a) => a.height)).toEqual([720, 480]);
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 4, held: 0 });
    const job = await h.gql<{ job: unknown }>(
      `query($id: ID!) { job(id: $id) { id status operation creditsCharged creditsHeld } }`,
      { id: body.id },
      key,
    );
    expect(job.data.job).toEqual({ id: body.id, status: 'SUCCEEDED', operation: 'PARSE', creditsCharged: 1, creditsHeld: 0 });
  });

  it('takes a URL that is media already, without downloading it', async () => {
    // Larger than the page cap: only its headers may be read.
    site.file('/direct/clip.mp4', Buffer.alloc(6 * 1024 * 1024), 'video/mp4');
    const { key } = await h.account();
    const res = await h.rest('/api/parse', { url: `${site.origin}/direct/clip.mp4` }, key);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      media: { url: `${site.origin}/direct/clip.mp4`, kind: 'video', container: 'mp4', hasVideo: true },
      alternatives: [],
      cover: null,
      metadata: { site: '127.0.0.1' },
    });
    const audio = await h.rest('/api/parse', { url: `${site.origin}/direct/clip.mp4`, mode: 'audio' }, key);
    expect(audio.statusCode).toBe(422);
    expect(audio.json<ErrorBody>().error.code).toBe('NO_MEDIA_FOUND');
  });

  it('honours quality: the highest format at or below the requested height', async () => {
    const { key } = await h.account();
    const res = await h.rest('/api/parse', { url: `${site.origin}/watch`, quality: '720' }, key);
    expect(res.json<ParseBody>().media.url).toBe(`${site.origin}/media/clip-720.mp4`);
  });

  it('gives the same result and the same charge through REST and GraphQL', async () => {
    const a = await h.account({ credits: 3 });
    const b = await h.account({ credits: 3 });
    const rest = parseBody(await h.rest('/api/parse', { url: `${site.origin}/watch`, mode: 'auto', quality: '480' }, a.key));
    // GraphQL's media carry an `audio` field REST leaves out when there is none.
    const gql = await h.gql<{ parse: ParseBody }>(
      `mutation($input: ParseInput!) { parse(input: $input) {
         id status url mode quality provider
         media { url kind container width height bitrate codecs durationSeconds hasAudio hasVideo expiresAt headers delivery audio { url } }
         alternatives { url kind container width height bitrate codecs durationSeconds hasAudio hasVideo expiresAt headers delivery audio { url } }
         items { url kind container width height bitrate codecs durationSeconds hasAudio hasVideo expiresAt headers delivery audio { url } title cover { url width height } alternatives { url } } itemsTotal
         cover { url width height }
         metadata { title author durationSeconds publishedAt description site }
         credits { charged balance } } }`,
      { input: { url: `${site.origin}/watch`, mode: 'auto', quality: '480' } },
      b.key,
    );
    expect(gql.errors).toBeUndefined();
    const { id: _r, ...restRest } = rest;
    const { id: _g, ...gqlRest } = gql.data.parse;
    const normalise = (o: unknown): unknown => JSON.parse(JSON.stringify(o, (_k, v) => (v === undefined ? null : v)));
    const withAudioNull = (o: Omit<ParseBody, 'id'>) => ({
      ...o,
      media: { audio: null, ...o.media },
      alternatives: o.alternatives.map((x) => ({ audio: null, ...x })),
      items: o.items.map((x) => ({ audio: null, ...x })),
    });
    expect(normalise(withAudioNull(gqlRest))).toEqual(normalise(withAudioNull(restRest)));
    expect(await h.balance(a.accountId)).toEqual(await h.balance(b.accountId));
  });

  it('charges nothing when the page holds no media (422 NO_MEDIA_FOUND)', async () => {
    const { key, accountId } = await h.account({ credits: 2 });
    const res = await h.rest('/api/parse', { url: `${site.origin}/empty` }, key);
    expect(res.statusCode).toBe(422);
    expect(res.json<ErrorBody>().error.code).toBe('NO_MEDIA_FOUND');
    expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
    const history = await h.gql<{ creditHistory: Connection<{ kind: string; amount: number }> }>(
      `{ creditHistory { edges { node { kind amount } } } }`,
      {},
      key,
    );
    expect(history.data.creditHistory.edges.map((e) => e.node.kind)).toEqual(['RELEASE', 'HOLD', 'GRANT']);
    const jobs = await h.gql<{ jobs: Connection<unknown> }>(
      `{ jobs(first: 5) { edges { node { status error { code } creditsCharged } } } }`,
      {},
      key,
    );
    expect(jobs.data.jobs.edges[0].node).toEqual({ status: 'FAILED', error: { code: 'NO_MEDIA_FOUND' }, creditsCharged: 0 });
  });

  it('charges nothing when the upstream fails (502 PROVIDER_ERROR), without leaking its text', async () => {
    const { key, accountId } = await h.account({ credits: 2 });
    const res = await h.rest('/api/parse', { url: `${site.origin}/broken` }, key);
    expect(res.statusCode).toBe(502);
    expect(res.json<ErrorBody>().error.code).toBe('PROVIDER_ERROR');
    expect(res.body).not.toContain('exploded');
    expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
    expect(await h.ledgerSums(accountId)).toEqual({ available: 2, held: 0 });
  });

  it('answers 402 with required and available when credits are short, and changes nothing', async () => {
    const { key, accountId } = await h.account({ credits: 0 });
    const res = await h.rest('/api/parse', { url: `${site.origin}/watch` }, key);
    expect(res.statusCode).toBe(402);
    expect(res.json<ErrorBody>().error).toMatchObject({ code: 'INSUFFICIENT_CREDITS', details: { required: 1, available: 0 } });
    const jobs = await h.gql<{ jobs: Connection<{ id: string }> }>(`{ jobs { edges { node { id } } } }`, {}, key);
    expect(jobs.data.jobs.edges).toEqual([]);
    expect(await h.balance(accountId)).toEqual({ available: 0, held: 0 });
    const gql = await h.gql(`mutation { parse(input: { url: "${site.origin}/watch" }) { id } }`, {}, key);
    expect(gql.errors?.[0].extensions).toEqual({ code: 'INSUFFICIENT_CREDITS', details: { required: 1, available: 0 } });
  });
});
