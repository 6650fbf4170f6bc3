import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createServices, type Services } from '../../src/services.js';
import { createTestDatabase } from './test-database.js';

export const TEST_PEPPER = 'test-pepper-0123456789abcdef0123456789';

export interface Harness {
  app: FastifyInstance;
  services: Services;
  config: Config;
  clientUrl: string;
  /** An account with a key; membership and credits as asked. */
  account(opts?: { credits?: number; member?: boolean; scopes?: string[] }): Promise<{ accountId: string; key: string; keyId: string }>;
  rest(path: string, body: unknown, key?: string | null, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  gql<T = any>(query: string, variables?: Record<string, unknown>, key?: string | null): Promise<{ status: number; data: T; errors?: any[] }>;
  balance(accountId: string): Promise<{ available: number; held: number }>;
  /** Ledger invariants: entries sum to the balance; nothing negative. */
  ledgerSums(accountId: string): Promise<{ available: number; held: number }>;
  close(): Promise<void>;
}

/** Boots the real app (both doors, real database) with test configuration; requests go through `inject`. */
export async function createHarness(env: Record<string, string> = {}): Promise<Harness> {
  const db = await createTestDatabase();
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    API_KEY_PEPPER: TEST_PEPPER,
    MEDIAGATE_DATA_DIR: '/tmp/mediagate-test-unused',
    ...env,
  });
  const services = createServices(config, db.orm, pino({ level: 'silent' }));
  const app = await buildApp({ services, orm: db.orm });
  await app.ready();

  const harness: Harness = {
    app,
    services,
    config,
    clientUrl: db.clientUrl,
    async account(opts = {}) {
      const acc = await services.accounts.create({
        name: 'Test account',
        credits: opts.credits ?? 10,
        membershipDays: opts.member === false ? undefined : 30,
      });
      const created = await services.apiKeys.create(acc.id, 'test', opts.scopes);
      return { accountId: acc.id, key: created.key, keyId: created.apiKey.id };
    },
    rest(path, body, key, headers = {}) {
      return app.inject({
        method: 'POST',
        url: path,
        headers: {
          'content-type': 'application/json',
          ...(key ? { authorization: `Bearer ${key}` } : {}),
          ...headers,
        },
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
    async gql(query, variables, key) {
      const res = await app.inject({
        method: 'POST',
        url: '/graphql',
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        payload: JSON.stringify({ query, variables }),
      });
      const body = res.json();
      return { status: res.statusCode, data: body.data, errors: body.errors };
    },
    balance: (accountId) => services.ledger.balance(accountId),
    async ledgerSums(accountId) {
      const rows = await db.orm.em
        .fork()
        .getConnection()
        .execute<{ a: string; h: string }[]>(
          `select coalesce(sum(available_delta), 0) as a, coalesce(sum(held_delta), 0) as h from credit_entry where account_id = ?`,
          [accountId],
        );
      return { available: Number(rows[0].a), held: Number(rows[0].h) };
    },
    async close() {
      await app.close();
      await services.close();
      await db.close();
    },
  };
  return harness;
}
