import { Cluster, gql } from './cluster-world.js';
import type { Reply } from '../support/send.js';

const status = (r: Reply) => ('lost' in r ? `lost: ${r.lost}` : r.status);

describe('rate limits across two gateways sharing one Redis', () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await Cluster.start({ worker: false, env: { RATE_LIMIT_PER_MINUTE: '6', RATE_LIMIT_IP_PER_MINUTE: '1000000' } });
  }, 180_000);
  afterAll(async () => {
    await c?.close();
  }, 60_000);

  const me = (base: string, key: string) => gql(base, key, '{ me { id } }');

  it('count a key once across both gateways; with Redis stopped, each counts in its own process and no request fails', async () => {
    const shared = await c.account(1);
    // Six requests spread over A and B use the key's six, the seventh is refused wherever it lands.
    const spread: (number | string)[] = [];
    for (let i = 0; i < 8; i++) spread.push(status(await me(i % 2 ? c.b : c.a, shared.key)));
    expect(spread).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
    expect(await c.redis.cli('get', `mediagate:rl:key:${shared.keyId}`)).toBe('8');

    await c.redis.stop();
    const alone = await c.account(1);
    // Twelve requests, six on each: each gateway counts its own six, so none is refused and none fails.
    const down: (number | string)[] = [];
    for (let i = 0; i < 12; i++) down.push(status(await me(i % 2 ? c.b : c.a, alone.key)));
    expect(down).toEqual(Array(12).fill(200));
    // Still limited, per process: A's seventh and B's seventh are the contract's 429.
    const seventh = [await me(c.a, alone.key), await me(c.b, alone.key)];
    expect(seventh.map(status)).toEqual([429, 429]);
    // Refused before GraphQL runs: the REST error body (as the HTTP layer answers every door).
    for (const r of seventh) if (!('lost' in r)) expect(r.json.error?.code ?? r.json.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    // Each gateway said once that it counts per process now.
    for (const g of c.gateways) expect(g.lastLines().match(/counted per process/g)).toHaveLength(1);
  }, 60_000);
});
