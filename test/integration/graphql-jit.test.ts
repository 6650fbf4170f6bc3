import { jitCounts } from '../../src/graphql/jit-executor.js';
import { createHarness, type Harness } from '../support/harness.js';
import type { GqlBody } from '../support/bodies.js';

// A document runs through graphql-js the first time and through its graphql-jit compiled function
// from the second on (src/graphql/jit-executor.ts). Whatever it asks, the caller must not be able to
// tell: each document below is sent three times and the three answers must be the same, status,
// headers that matter and body, on data, null propagation, resolver errors and refused variables.
describe('GraphQL: compiled documents answer exactly as interpreted ones', () => {
  let h: Harness;
  let key: string;
  let accountId: string;
  beforeAll(async () => {
    h = await createHarness();
    ({ key, accountId } = await h.account({ credits: 7 }));
    // Entries to read back: a grant is there already; a failed parse adds a hold and its release.
    await h.gql('mutation { parse(input: { url: "http://127.0.0.1/x" }) { id } }', {}, key);
  });
  afterAll(() => h.close());

  // [what it shows, document, variables, the first error's code (null: none)]
  const cases: Array<[string, string, Record<string, unknown>, string | null]> = [
    ['plain fields and nested objects', '{ me { id name credits { available held } membership { active } } }', {}, null],
    [
      'fragments, aliases, @skip and @include from variables',
      `query Q($withKeys: Boolean!, $noCredits: Boolean!) {
         mine: me { ...Who credits @skip(if: $noCredits) { available } }
         again: me { id apiKeys @include(if: $withKeys) { name scopes } }
       }
       fragment Who on Account { id name }`,
      { withKeys: true, noCredits: false },
      null,
    ],
    [
      'the same with the other branch of each directive',
      'query Q($withKeys: Boolean!, $noCredits: Boolean!) { me { id apiKeys @include(if: $withKeys) { name } credits @skip(if: $noCredits) { held } } }',
      { withKeys: false, noCredits: true },
      null,
    ],
    [
      'lists, connections and custom scalars',
      '{ creditHistory(first: 5) { edges { cursor node { kind amount createdAt } } pageInfo { hasNextPage } } }',
      {},
      null,
    ],
    [
      'variables of custom scalar and enum types',
      'query($from: DateTime, $kinds: [CreditEntryKind!]) { creditHistory(from: $from, kinds: $kinds) { edges { node { kind } } } }',
      { from: '2020-01-01T00:00:00Z', kinds: ['GRANT'] },
      null,
    ],
    [
      'a refused enum variable',
      'query($kinds: [CreditEntryKind!]) { creditHistory(kinds: $kinds) { edges { node { kind } } } }',
      { kinds: ['NOPE'] },
      'INVALID_INPUT',
    ],
    [
      'a refused scalar variable',
      'query($from: DateTime) { creditHistory(from: $from) { edges { node { kind } } } }',
      { from: 'yesterday' },
      'INVALID_INPUT',
    ],
    ['a missing required variable', 'query($id: ID!) { job(id: $id) { id } }', {}, 'INVALID_INPUT'],
    [
      'a resolver error on a non-null root field',
      'query($id: ID!) { job(id: $id) { id status } }',
      { id: '00000000-0000-4000-8000-000000000000' },
      'NOT_FOUND',
    ],
    [
      'an error beside data (another account is refused, the caller still answered)',
      `query($a: ID) { me { id } creditHistory(accountId: $a) { edges { node { kind } } } }`,
      { a: '00000000-0000-4000-8000-000000000001' },
      'FORBIDDEN',
    ],
    [
      'an application error from a mutation',
      'mutation($u: String!) { parse(input: { url: $u }) { id } }',
      { u: 'http://10.0.0.1/page' },
      'URL_NOT_ALLOWED',
    ],
    [
      'an argument refused by the service',
      'mutation($u: String!, $q: String) { parse(input: { url: $u, quality: $q }) { id } }',
      { u: 'https://example.com/v', q: '123p' },
      'INVALID_INPUT',
    ],
  ];

  it.each(cases)('%s', async (_name, query, variables, code) => {
    const answers = [];
    const before = { ...jitCounts };
    for (let run = 0; run < 3; run++) {
      const res = await h.request('POST', '/graphql', {
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query, variables }),
      });
      answers.push({
        status: res.statusCode,
        type: res.headers['content-type'],
        cacheControl: res.headers['cache-control'],
        body: res.json<GqlBody>(),
      });
    }
    // Compiled once, on the second run, and the second and third runs went through the compiled function.
    expect({ compiled: jitCounts.compiled - before.compiled, compiledRuns: jitCounts.compiledRuns - before.compiledRuns }).toEqual({
      compiled: 1,
      compiledRuns: 2,
    });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
    // Each case shows what it says it shows, on the first (interpreted) run as on the others.
    expect(answers[0].body.errors?.[0].extensions.code ?? null).toBe(code);
    if (!code) expect(answers[0].body.data).toBeTruthy();
  });

  it('charges nothing for any of it but the one failed parse, which it released', async () => {
    expect(await h.balance(accountId)).toEqual({ available: 7, held: 0 });
  });
});
