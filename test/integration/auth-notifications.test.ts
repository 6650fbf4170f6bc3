import type { ChannelPayloads } from '../../src/db/notifications.js';
import { createHarness, type Harness } from '../support/harness.js';
import { TEST_DATABASES } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';
import { OPERATOR } from '../../src/modules/principal.js';

const DATABASES = TEST_DATABASES;

/** What a cache of keys will listen to (`mediagate_auth`): every change that decides who may do what, and nothing else. */
describe.each(DATABASES)('auth notifications (%s database)', (database) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({}, undefined, { database });
  }, 60_000);
  afterAll(() => h?.close());

  it('tells of a key created, a key revoked, a membership ended and roles changed, but not of a key being used', async () => {
    const heard: ChannelPayloads['mediagate_auth'][] = [];
    const stop = h.notifications.on('mediagate_auth', (n) => void heard.push(n));
    const heardAtLeast = (count: number) =>
      waitFor(
        () => {
          if (heard.length < count) throw new Error(`heard only ${JSON.stringify(heard)}`);
          return true;
        },
        { describe: `${count} notifications`, timeout: 5_000, interval: 10 },
      );
    try {
      const { key, keyId, accountId } = await h.account();
      // The account's own making (its membership, its first key) comes first, in commit order.
      await waitFor(() => heard.some((n) => n.apiKeyId === keyId), {
        describe: 'the notification of the first key',
        timeout: 5_000,
        interval: 10,
      });
      heard.length = 0;
      const created = await h.gql<{ createApiKey: { key: string; apiKey: { id: string } } }>(
        `mutation { createApiKey(name: "second") { key apiKey { id } } }`,
        {},
        key,
      );
      const second = created.data.createApiKey;
      // Using a key writes its last_used_at (to the minute): no notification for that.
      expect((await h.gql<{ me: { id: string } }>(`{ me { id } }`, {}, second.key)).data.me.id).toBe(accountId);
      await waitFor(
        async () => (await h.sql(`select 1 from api_key where id = ? and last_used_at is not null`, [second.apiKey.id])).length,
        { describe: "the second key's last_used_at", timeout: 5_000, interval: 10 },
      );
      expect(await h.sql(`select 1 from api_key where id = ? and last_used_at is not null`, [second.apiKey.id])).toHaveLength(1);
      await h.gql(`mutation($id: ID!) { revokeApiKey(id: $id) { revokedAt } }`, { id: second.apiKey.id }, key);
      await h.services.accounts.cancelMembership(OPERATOR, accountId);
      await h.sql(`update account set roles = '{analyst}' where id = ?`, [accountId]);
      // A name is not about access.
      await h.sql(`update account set name = 'renamed' where id = ?`, [accountId]);
      await h.sql(`update account set roles = '{}' where id = ?`, [accountId]);
      // Heard in commit order: a notification for last_used_at would stand before the revocation's.
      await heardAtLeast(5);
      expect(heard).toEqual([
        { apiKeyId: second.apiKey.id, accountId },
        { apiKeyId: second.apiKey.id, accountId },
        { accountId },
        { accountId },
        { accountId },
      ]);
    } finally {
      stop();
    }
  });
});
