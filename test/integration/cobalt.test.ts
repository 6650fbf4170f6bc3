import { createHarness, type Harness } from '../support/harness.js';
import { startFakeCobalt } from '../fakes/cobalt.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { parseBody, type ErrorBody, type ParseBody } from '../support/bodies.js';

describe('parse through cobalt, with failover', () => {
  let h: Harness;
  let cobalt: Awaited<ReturnType<typeof startFakeCobalt>>;
  let site: FakeSite;
  let key: string;
  let accountId: string;
  beforeAll(async () => {
    cobalt = await startFakeCobalt({ apiKey: 'cobalt-secret' });
    site = await startFakeSite();
    site.page(
      '/page',
      `<html><head><meta property="og:video" content="https://cdn.example/og.mp4"><meta property="og:video:type" content="video/mp4"></head></html>`,
    );
    h = await createHarness({
      PARSE_PROVIDERS: 'cobalt,builtin',
      COBALT_API_URL: cobalt.url,
      COBALT_API_KEY: 'cobalt-secret',
      FETCH_ALLOW_HOSTS: site.hostPort,
    });
    ({ key, accountId } = await h.account({ credits: 20 }));
  });
  afterAll(async () => {
    await h.close();
    await cobalt.close();
    await site.close();
  });

  it('sends cobalt our mode and quality and maps a tunnel answer', async () => {
    const res = await h.rest('/api/parse', { url: 'https://www.youtube.com/tunnel', quality: '720' }, key);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      provider: 'cobalt',
      media: {
        url: expect.stringContaining('/tunnel?id=abc'),
        kind: 'video',
        container: 'mp4',
        width: 1280,
        height: 720,
        hasAudio: true,
        expiresAt: '2030-03-17T17:46:40.000Z',
      },
      metadata: { site: 'www.youtube.com' },
      credits: { charged: 1 },
    });
    expect(cobalt.calls.at(-1)).toMatchObject({
      body: { url: 'https://www.youtube.com/tunnel', downloadMode: 'auto', videoQuality: '720' },
      headers: { authorization: 'Api-Key cobalt-secret', accept: 'application/json' },
    });
    const audio = await h.rest('/api/parse', { url: 'https://www.youtube.com/tunnel', mode: 'audio' }, key);
    expect(audio.json<ParseBody>().media).toMatchObject({ kind: 'audio', container: 'mp3', hasVideo: false });
  });

  it('maps a picker (gallery) into items of kind image, with the slideshow audio for mode audio', async () => {
    const res = parseBody(await h.rest('/api/parse', { url: 'https://www.tiktok.com/picker' }, key));
    expect(res.items.map((i) => [i.url, i.kind])).toEqual([
      ['https://cdn.example/p1.jpg', 'image'],
      ['https://cdn.example/p2.jpg', 'image'],
    ]);
    expect(res.cover).toEqual({ url: 'https://cdn.example/p1-thumb.jpg', width: null, height: null });
    const audio = parseBody(await h.rest('/api/parse', { url: 'https://www.tiktok.com/picker', mode: 'audio' }, key));
    expect(audio.media).toMatchObject({ url: 'https://cdn.example/slideshow.mp3', kind: 'audio' });
  });

  it('says CONTENT_UNAVAILABLE for private content, free of charge', async () => {
    const before = await h.balance(accountId);
    const res = await h.rest('/api/parse', { url: 'https://www.youtube.com/private' }, key);
    expect(res.statusCode).toBe(422);
    expect(res.json<ErrorBody>().error.code).toBe('CONTENT_UNAVAILABLE');
    expect(res.body).not.toContain('error.api');
    expect(await h.balance(accountId)).toEqual(before);
  });

  it('fails over to the builtin provider when cobalt cannot handle the link', async () => {
    const res = await h.rest('/api/parse', { url: `${site.origin}/page` }, key);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ provider: 'builtin', media: { url: 'https://cdn.example/og.mp4' } });
  });

  it('refuses to start with cobalt configured but no COBALT_API_URL', async () => {
    await expect(createHarness({ PARSE_PROVIDERS: 'cobalt' })).rejects.toThrow(/COBALT_API_URL/);
  });
});
