import { createHarness, type Harness } from '../support/harness.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { ErrorBody } from '../support/bodies.js';

/** The contract's statuses and bodies for bad requests, through both doors. Nothing here reaches a provider. */
describe('errors', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  const url = 'https://video.example/watch/1';

  describe('authentication', () => {
    it('gives one identical 401 body for missing, malformed, bad-checksum, unknown and revoked keys', async () => {
      const { key, keyId } = await h.account();
      const last = key.at(-1) === 'a' ? 'b' : 'a';
      const unknownKey = (() => {
        // A well-formed key with a valid checksum that was never issued.
        return key.replace(/_([0-9A-Za-z]{12})_/, '_AAAAAAAAAAAA_');
      })();
      await h.services.apiKeys.revoke(OPERATOR, keyId);
      const cases: Array<[string, Record<string, string>]> = [
        ['missing', {}],
        ['not bearer', { authorization: `Basic ${key}` }],
        ['malformed', { authorization: 'Bearer nope' }],
        ['bad checksum', { authorization: `Bearer ${key.slice(0, -1)}${last}` }],
        ['unknown', { authorization: `Bearer ${unknownKey}` }],
        ['revoked', { authorization: `Bearer ${key}` }],
      ];
      const bodies = [];
      for (const [, headers] of cases) {
        const res = await h.rest('/api/parse', { url }, null, headers);
        expect(res.statusCode).toBe(401);
        const { requestId, ...rest } = res.json<ErrorBody>().error;
        expect(typeof requestId).toBe('string');
        bodies.push(rest);
      }
      expect(new Set(bodies.map((b) => JSON.stringify(b))).size).toBe(1);
      expect(bodies[0].code).toBe('UNAUTHENTICATED');
      const gql = await h.gql(`{ me { id } }`, {}, key);
      expect(gql.errors?.[0].extensions.code).toBe('UNAUTHENTICATED');
    });

    it('refuses a key the moment it is revoked', async () => {
      const { key, keyId } = await h.account();
      expect((await h.gql(`{ me { id } }`, {}, key)).errors).toBeUndefined();
      const revoked = await h.gql<{ revokeApiKey: { id: string; revokedAt: string | null } }>(
        `mutation($id: ID!) { revokeApiKey(id: $id) { id revokedAt } }`,
        { id: keyId },
        key,
      );
      expect(revoked.data.revokeApiKey.revokedAt).not.toBeNull();
      expect((await h.gql(`{ me { id } }`, {}, key)).errors?.[0].extensions.code).toBe('UNAUTHENTICATED');
    });

    it('answers 403 MEMBERSHIP_REQUIRED to a valid key without membership, on both doors, and still lets it read its account', async () => {
      const { key } = await h.account({ member: false });
      const res = await h.rest('/api/parse', { url, quality: '480' }, key);
      expect(res.statusCode).toBe(403);
      expect(res.json<ErrorBody>().error.code).toBe('MEMBERSHIP_REQUIRED');
      const t = await h.rest('/api/transcribe', { mediaUrl: 'https://cdn.example/a.mp3' }, key);
      expect(t.statusCode).toBe(403);
      const gql = await h.gql(`mutation { parse(input: { url: "${url}", quality: "1080" }) { id } }`, {}, key);
      expect(gql.errors?.[0].extensions.code).toBe('MEMBERSHIP_REQUIRED');
      const me = await h.gql<{ me: unknown }>(`{ me { membership { active } credits { available held } } }`, {}, key);
      expect(me.data.me).toEqual({ membership: null, credits: { available: 10, held: 0 } });
    });
  });

  describe('validation', () => {
    let key: string;
    let accountId: string;
    beforeAll(async () => {
      ({ key, accountId } = await h.account({ credits: 3 }));
    });
    afterAll(async () => {
      // No bad request may change anything.
      expect(await h.balance(accountId)).toEqual({ available: 3, held: 0 });
    });

    it.each([
      ['an unknown field', { url, extra: 1 }, ['extra']],
      ['a wrong type', { url: 42 }, ['url']],
      ['a bad mode and quality', { url, mode: 'loud', quality: '4k' }, ['mode', 'quality']],
      ['a non-http URL', { url: 'file:///etc/passwd' }, ['url']],
      ['a relative URL', { url: '/watch' }, ['url']],
      ['a missing url', { mode: 'auto' }, ['url']],
    ])('refuses %s with 400 INVALID_INPUT naming each field', async (_label, body, fields) => {
      const res = await h.rest('/api/parse', body, key);
      expect(res.statusCode).toBe(400);
      const error = res.json<ErrorBody>().error;
      expect(error.code).toBe('INVALID_INPUT');
      expect(Object.keys(error.details!).sort()).toEqual([...fields].sort());
    });

    it('refuses a body over 16 KiB with 400', async () => {
      const res = await h.rest('/api/parse', { url: `${url}?q=${'a'.repeat(17 * 1024)}` }, key);
      expect(res.statusCode).toBe(400);
      expect(res.json<ErrorBody>().error.code).toBe('INVALID_INPUT');
    });

    it('refuses malformed JSON with 400 and a wrong content type with 415', async () => {
      const bad = await h.rest('/api/parse', '{"url": ', key);
      expect(bad.statusCode).toBe(400);
      expect(bad.json<ErrorBody>().error.code).toBe('INVALID_INPUT');
      const form = await h.rest('/api/parse', 'url=x', key, { 'content-type': 'application/x-www-form-urlencoded' });
      expect(form.statusCode).toBe(415);
      expect(form.json<ErrorBody>().error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
      const text = await h.rest('/api/transcribe', 'hello', key, { 'content-type': 'text/plain' });
      expect(text.statusCode).toBe(415);
    });

    it('refuses a JSON array or a bad language for transcribe', async () => {
      const arr = await h.rest('/api/transcribe', [1, 2], key);
      expect(arr.statusCode).toBe(400);
      const lang = await h.rest('/api/transcribe', { mediaUrl: 'https://cdn.example/a.mp3', language: 'english please' }, key);
      expect(lang.statusCode).toBe(400);
      expect(lang.json<ErrorBody>().error.details).toHaveProperty('language');
      const format = await h.request('POST', '/api/transcribe?format=docx', {
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ mediaUrl: 'https://cdn.example/a.mp3' }),
      });
      expect(format.statusCode).toBe(400);
      expect(format.json<ErrorBody>().error.details).toHaveProperty('format');
    });

    it('gives GraphQL the same codes', async () => {
      const bad = await h.gql(`mutation { parse(input: { url: "ftp://x.example/a" }) { id } }`, {}, key);
      expect(bad.errors?.[0].extensions).toMatchObject({ code: 'INVALID_INPUT', details: { url: expect.any(String) } });
      const typo = await h.gql(`mutation { parse(input: { url: "${url}", colour: "red" }) { id } }`, {}, key);
      expect(typo.errors?.[0].extensions.code).toBe('INVALID_INPUT');
      const syntax = await h.gql(`mutation { parse(`, {}, key);
      expect(syntax.errors?.[0].extensions.code).toBe('INVALID_INPUT');
    });
  });

  it('answers unknown routes with the error body', async () => {
    const res = await h.request('GET', '/api/nope');
    expect(res.statusCode).toBe(404);
    expect(res.json<ErrorBody>().error.code).toBe('NOT_FOUND');
  });

  it('refuses GraphQL operations past the depth and alias limits', async () => {
    const { key } = await h.account();
    const aliases = Array.from({ length: 16 }, (_, i) => `a${i}: me { id }`).join(' ');
    const res = await h.gql(`{ ${aliases} }`, {}, key);
    expect(res.errors?.[0].extensions.code).toBe('INVALID_INPUT');
    expect(res.errors?.[0].message).toMatch(/aliases/i);
  });
});
