import type { AddressInfo } from 'node:net';
import { jest } from '@jest/globals';
import { pino } from 'pino';
import type { Config } from '../../src/config.js';
import { BACKSTOP_MS, type Notifications } from '../../src/db/notifications.js';
import { cacheClock } from '../../src/modules/api-keys/api-key.cache.js';
import { createHttpApp, openOrm, createServices } from '../../src/root.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { createHarness, type Harness } from '../support/harness.js';
import { changeUnheard, heardAccount, parseThrough } from '../support/parse-doors.js';
import { TEST_DATABASES } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';
import { OPERATOR } from '../../src/modules/principal.js';

const DATABASES = TEST_DATABASES;

/** Notifications that claim to listen and never deliver: an instance that missed every change. */
const deaf: Notifications = {
  on: () => () => {},
  onReconnect: () => () => {},
  recheckMs: BACKSTOP_MS,
  start: async () => {},
  close: async () => {},
};

/** Another gateway on the harness's database, with its own services, key cache and configuration. */
async function otherInstance(h: Harness, overrides: Partial<Config>, notifications: Notifications) {
  const orm = await openOrm(h.clientUrl, 2);
  const services = createServices({ ...h.config, ...overrides }, orm, pino({ level: 'silent' }), { notifications });
  const app = await createHttpApp(services, orm);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    services,
    me: async (key: string) => {
      const res = await fetch(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query: '{ me { id } }' }),
      });
      const body = (await res.json()) as { data?: { me: { id: string } }; errors?: { extensions: { code: string } }[] };
      return body.errors ? body.errors[0].extensions.code : body.data!.me.id;
    },
    async close() {
      await app.close();
      await services.close();
      await orm.close(true);
    },
  };
}

/**
 * The API-key cache (API_KEY_CACHE_SECONDS): what the database says changed clears it, on every
 * instance, and a revoked key can never spend, even on an instance whose cache missed the change.
 */
describe.each(DATABASES)('API key cache (%s database)', (database) => {
  let h: Harness;
  let site: FakeSite;
  let page: string;
  beforeAll(async () => {
    site = await startFakeSite();
    site.page(
      '/v',
      `<html><head><meta property="og:video" content="${site.origin}/v.mp4"><meta property="og:video:type" content="video/mp4"></head></html>`,
    );
    page = `${site.origin}/v`;
    h = await createHarness({ FETCH_ALLOW_HOSTS: site.hostPort }, undefined, { database });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await site?.close();
  });

  const me = async (key: string) => {
    const r = await h.gql<{ me: { id: string } }>(`{ me { id } }`, {}, key);
    return r.errors ? r.errors[0].extensions.code : r.data.me.id;
  };

  it('refuses the very next parse of a key revoked through another instance, on one that never heard of it, and moves no credit', async () => {
    const deafOne = await otherInstance(h, {}, deaf);
    try {
      const { key, keyId, accountId } = await h.account({ credits: 5 });
      expect((await parseThrough('rest', deafOne.url, key, page)).status).toBe(200);
      const revoked = await h.gql<{ revokeApiKey: { revokedAt: string | null } }>(
        `mutation($id: ID!) { revokeApiKey(id: $id) { revokedAt } }`,
        { id: keyId },
        key,
      );
      expect(revoked.data.revokeApiKey.revokedAt).not.toBeNull();
      // The state this test is about: the deaf instance still trusts its cached key for reading.
      expect(await deafOne.me(key)).toBe(accountId);

      expect(await parseThrough('rest', deafOne.url, key, page)).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });
      expect(await parseThrough('graphql', deafOne.url, key, page)).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });
      // Refused once, the key is forgotten there too.
      expect(await deafOne.me(key)).toBe('UNAUTHENTICATED');
      expect(await h.balance(accountId)).toEqual({ available: 4, held: 0 });
      expect(await h.ledgerSums(accountId)).toEqual({ available: 4, held: 0 });
      expect((await h.repositories.jobs.list(accountId, 10, null)).edges).toHaveLength(1);
    } finally {
      await deafOne.close();
    }
  });

  it('refuses a key revoked through GraphQL on the same instance at once, on both doors', async () => {
    const { key, keyId, accountId } = await h.account({ credits: 5 });
    expect((await parseThrough('graphql', h.url, key, page)).status).toBe(200);
    await h.gql(`mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, { id: keyId }, key);
    expect(await parseThrough('rest', h.url, key, page)).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });
    expect(await parseThrough('graphql', h.url, key, page)).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });
    expect(await me(key)).toBe('UNAUTHENTICATED');
    expect(await h.balance(accountId)).toEqual({ available: 4, held: 0 });
  });

  it('refuses createApiKey and rotateWebhookSecret by a key revoked behind this instance’s back: UNAUTHENTICATED, as any revoked key, and nothing written', async () => {
    const keysOf = async (accountId: string) =>
      Number((await h.sql<{ n: string }>(`select count(*) as n from api_key where account_id = ?`, [accountId]))[0].n);
    const secretRowOf = async (accountId: string) =>
      (
        await h.sql<{ s: string; at: string }>(
          `select encode(secret_enc, 'hex') as s, created_at::text as at from webhook_secret where account_id = ?`,
          [accountId],
        )
      )[0];

    // Minting a key: the statement itself checks the caller's key, whatever this instance's cache says.
    const minter = await heardAccount(h, { credits: 5 });
    expect(await me(minter.key)).toBe(minter.accountId); // now in the cache
    await changeUnheard(h, `update api_key set revoked_at = now() where id = $1`, [minter.keyId]);
    expect(await me(minter.key)).toBe(minter.accountId); // the cache has not heard
    const mint = () => h.gql(`mutation { createApiKey(name: "after revocation") { key apiKey { id } } }`, {}, minter.key);
    const created = await mint();
    expect({ code: created.errors?.[0].extensions.code, data: created.data }).toEqual({ code: 'UNAUTHENTICATED', data: null });
    expect(await keysOf(minter.accountId)).toBe(1);
    // Refused once, the key is forgotten here too, and the answer is the one any revoked key gets.
    expect(await me(minter.key)).toBe('UNAUTHENTICATED');
    const answer = (r: Awaited<ReturnType<typeof mint>>) => ({
      status: r.status,
      errors: r.errors?.map((e) => [e.message, e.extensions.code]),
      data: r.data,
    });
    expect(answer(created)).toEqual(answer(await mint()));

    // Rotating the webhook secret: the same.
    const rotator = await heardAccount(h, { credits: 5 });
    const secret = (await h.gql<{ webhookSecret: { secret: string } }>(`{ webhookSecret { secret } }`, {}, rotator.key)).data.webhookSecret
      .secret;
    const row = await secretRowOf(rotator.accountId);
    await changeUnheard(h, `update api_key set revoked_at = now() where id = $1`, [rotator.keyId]);
    expect(await me(rotator.key)).toBe(rotator.accountId);
    const rotate = () => h.gql(`mutation { rotateWebhookSecret { secret } }`, {}, rotator.key);
    const rotated = await rotate();
    expect({ code: rotated.errors?.[0].extensions.code, data: rotated.data }).toEqual({ code: 'UNAUTHENTICATED', data: null });
    expect(JSON.stringify(rotated)).not.toContain('whsec_');
    expect(await secretRowOf(rotator.accountId)).toEqual(row);
    expect(await me(rotator.key)).toBe('UNAUTHENTICATED');
    expect(answer(rotated)).toEqual(answer(await rotate()));

    // A live key still does both.
    const live = await h.account({ credits: 5 });
    expect(
      (
        await h.gql<{ createApiKey: { apiKey: { name: string } } }>(
          `mutation { createApiKey(name: "second") { apiKey { name } } }`,
          {},
          live.key,
        )
      ).data.createApiKey.apiKey.name,
    ).toBe('second');
    expect(await keysOf(live.accountId)).toBe(2);
    expect(
      (await h.gql<{ rotateWebhookSecret: { secret: string } }>(`mutation { rotateWebhookSecret { secret } }`, {}, live.key)).data
        .rotateWebhookSecret.secret,
    ).toMatch(/^whsec_/);
    expect(secret).toMatch(/^whsec_/);
  });

  it('hears of a membership canceled by another instance: the next parse after the notification is 403, and nothing is charged', async () => {
    const operator = await otherInstance(h, {}, deaf);
    const heard: string[] = [];
    const stop = h.notifications.on('mediagate_auth', (n) => void heard.push(n.accountId));
    try {
      const { key, accountId } = await heardAccount(h, { credits: 5 });
      expect((await parseThrough('rest', h.url, key, page)).status).toBe(200);
      heard.length = 0;
      await operator.services.accounts.cancelMembership(OPERATOR, accountId);
      await waitFor(() => heard.includes(accountId), { describe: `the notification about ${accountId}`, timeout: 5_000 });
      expect(await parseThrough('rest', h.url, key, page)).toMatchObject({ status: 403, code: 'MEMBERSHIP_REQUIRED' });
      expect(await parseThrough('graphql', h.url, key, page)).toMatchObject({ status: 403, code: 'MEMBERSHIP_REQUIRED' });
      expect(await h.balance(accountId)).toEqual({ available: 4, held: 0 });
    } finally {
      stop();
      await operator.close();
    }
  });

  it('keeps an unheard change at most API_KEY_CACHE_SECONDS, and looks keys up every time with 0', async () => {
    const short = await otherInstance(h, { apiKeyCacheMs: 1000 }, deaf);
    const none = await otherInstance(h, { apiKeyCacheMs: 0 }, deaf);
    try {
      const { key, keyId, accountId } = await h.account({ credits: 5 });
      expect(await short.me(key)).toBe(accountId);
      expect(await none.me(key)).toBe(accountId);
      await changeUnheard(h, `update api_key set revoked_at = now() where id = $1`, [keyId]);
      expect(await none.me(key)).toBe('UNAUTHENTICATED');
      expect(await short.me(key)).toBe(accountId);
      // 1.1 s pass on the caches' clock.
      const now = jest.spyOn(cacheClock, 'now');
      const skew = 1100;
      try {
        now.mockImplementation(() => performance.now() + skew);
        expect(await short.me(key)).toBe('UNAUTHENTICATED');
      } finally {
        now.mockRestore();
      }
    } finally {
      await short.close();
      await none.close();
    }
  });

  if (database === 'default') {
    it('forgets every key when the listening connection was lost, since a change may have gone unheard meanwhile', async () => {
      const { key, keyId, accountId } = await heardAccount(h, { credits: 5 });
      expect(await me(key)).toBe(accountId);
      await changeUnheard(h, `update api_key set revoked_at = now() where id = $1`, [keyId]);
      expect(await me(key)).toBe(accountId);
      expect(await h.severDatabaseConnections()).toBeGreaterThan(0);
      // The answer while the pool reconnects may be an error: asked again until the key is refused.
      await waitFor(async () => (await me(key).catch((err: Error) => `not answered: ${err.message}`)) === 'UNAUTHENTICATED', {
        describe: 'the revoked key to be refused',
        timeout: 10_000,
        interval: 50,
      });
    });
  }
});
