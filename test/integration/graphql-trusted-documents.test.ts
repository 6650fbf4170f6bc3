import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, type Client } from 'graphql-ws';
import { jest } from '@jest/globals';
import WebSocket from 'ws';
import { createHarness, type Harness } from '../support/harness.js';
import { TEST_DATABASES } from '../support/test-database.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { GqlRefusal, SessionBody } from '../support/bodies.js';

// The config check test starts the CLI: seconds of CPU while another jest worker shares the cores.
jest.setTimeout(120_000);

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const persisted = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });
const UNTRUSTED = /^This server runs only trusted documents \(GRAPHQL_TRUSTED_DOCUMENTS_ONLY\)/;

const ME = 'query TrustedMe { me { id } }';
const JOBS = 'query TrustedJobs($n: Int) { jobs(first: $n) { edges { cursor } } }';
const FOLLOW = 'subscription TrustedFollow($id: ID!) { jobUpdated(id: $id) { id } }';

/** The account area's manifest, as `npm run build` made it beside the page (ui/build.mjs). */
const ACCOUNT_MANIFEST = join(process.cwd(), 'dist/account-ui/persisted-documents.json');

const dir = mkdtempSync(join(tmpdir(), 'mediagate-trusted-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** graphql-codegen's client preset writes `sha256:<hex>` → text; Apollo's tool its own manifest. */
const codegenManifest = join(dir, 'persisted-documents.json');
writeFileSync(codegenManifest, JSON.stringify({ [`sha256:${sha256(ME)}`]: ME, [`sha256:${sha256(FOLLOW)}`]: FOLLOW }));
const apolloManifest = join(dir, 'persisted-query-manifest.json');
writeFileSync(
  apolloManifest,
  JSON.stringify({
    format: 'apollo-persisted-query-manifest',
    version: 1,
    operations: [{ id: sha256(JOBS), name: 'TrustedJobs', type: 'query', body: JOBS }],
  }),
);

describe.each(TEST_DATABASES)('trusted documents (%s database)', (database) => {
  let h: Harness;
  const post = (headers: Record<string, string>, body: unknown) =>
    h.request('POST', '/graphql', { headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  const ws = (key: string): Client =>
    createClient({
      url: `${h.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: bearer(key),
      retryAttempts: 0,
    });
  /** The first message of a subscribe: its errors, or its data. */
  const firstOf = (client: Client, payload: { query: string; variables?: Record<string, unknown>; extensions?: Record<string, unknown> }) =>
    new Promise<unknown>((resolve) =>
      client.subscribe(payload, { next: (m) => resolve(m.errors ?? m.data), error: resolve, complete: () => resolve('complete') }),
    );

  describe('served by hash alone', () => {
    beforeAll(async () => {
      h = await createHarness({ GRAPHQL_PERSISTED_DOCUMENTS: codegenManifest }, undefined, { database });
    });
    afterAll(() => h?.close());

    it('over POST, GET and the WebSocket, without registering them first; other documents run as ever', async () => {
      const { key, accountId } = await h.account();
      const byPost = await post(bearer(key), { extensions: persisted(sha256(ME)) });
      expect([byPost.statusCode, byPost.json()]).toEqual([200, { data: { me: { id: accountId } } }]);
      const byGet = await h.request('GET', `/graphql?extensions=${encodeURIComponent(JSON.stringify(persisted(sha256(ME))))}`, {
        headers: bearer(key),
      });
      expect(byGet.json()).toEqual({ data: { me: { id: accountId } } });
      expect((await post(bearer(key), { query: '{ me { name } }' })).json()).toEqual({ data: { me: { name: 'Test account' } } });
      const client = ws(key);
      try {
        const errors = (await firstOf(client, {
          query: '',
          variables: { id: '00000000-0000-4000-8000-000000000000' },
          extensions: persisted(sha256(FOLLOW)),
        })) as { extensions: { code: string } }[];
        // It ran: the job is not the caller's (NOT_FOUND), not a refusal of the document.
        expect(errors[0].extensions.code).toBe('NOT_FOUND');
      } finally {
        await client.dispose();
      }
    });

    it('keeps the trusted documents’ operation names on /metrics', async () => {
      const { key } = await h.account();
      const count = async () =>
        Number(
          /mediagate_graphql_operation_duration_seconds_count\{operation="TrustedMe",type="query",outcome="OK"\} (\d+)/.exec(
            (await h.request('GET', '/metrics')).body,
          )?.[1] ?? 0,
        );
      const before = await count();
      await post(bearer(key), { extensions: persisted(sha256(ME)) });
      expect(await count()).toBe(before + 1);
    });
  });

  describe('GRAPHQL_TRUSTED_DOCUMENTS_ONLY', () => {
    beforeAll(async () => {
      h = await createHarness({ GRAPHQL_PERSISTED_DOCUMENTS: apolloManifest, GRAPHQL_TRUSTED_DOCUMENTS_ONLY: 'true' }, undefined, {
        database,
      });
    });
    afterAll(() => h?.close());

    it('runs the manifest’s documents, by hash or by their exact text, and refuses any other with 400 INVALID_INPUT', async () => {
      const { key, accountId } = await h.account({ credits: 2 });
      expect((await post(bearer(key), { extensions: persisted(sha256(JOBS)), variables: { n: 1 } })).json()).toEqual({
        data: { jobs: { edges: [] } },
      });
      expect((await post(bearer(key), { query: JOBS, variables: { n: 2 } })).json()).toEqual({ data: { jobs: { edges: [] } } });
      for (const body of [
        { query: '{ me { id } }' },
        { query: `${JOBS} ` },
        { extensions: persisted(sha256('{ me { id } }')) },
        { query: 'mutation { parse(input: { url: "https://example.com/" }) { id } }' },
      ]) {
        const refused = await post(bearer(key), body);
        expect(refused.statusCode).toBe(400);
        expect(refused.json()).toEqual({ errors: [{ message: expect.stringMatching(UNTRUSTED), extensions: { code: 'INVALID_INPUT' } }] });
      }
      expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
      // Anonymous callers too; GET too.
      expect((await post({}, { query: '{ __typename }' })).statusCode).toBe(400);
      expect(
        (await h.request('GET', `/graphql?query=${encodeURIComponent('{ me { id } }')}`, { headers: bearer(key) })).json<GqlRefusal>()
          .errors[0].message,
      ).toMatch(UNTRUSTED);
    });

    /** A GET whose request target is sent exactly as written (fetch would drop a fragment, or encode it). */
    const rawGet = (target: string, headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const { hostname, port } = new URL(h.url);
        const req = httpRequest({ host: hostname, port, method: 'GET', path: target, headers }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
      });

    it('never runs an untrusted query hidden behind a `#` or a repeated parameter: Apollo runs only what was checked', async () => {
      const { key } = await h.account();
      const trustedHash = encodeURIComponent(JSON.stringify(persisted(sha256(JOBS))));
      const untrusted = encodeURIComponent('{ me { id name } }');
      // The router reads the query string from the `#`, where it finds only the trusted hash; a reader
      // of everything after the first `?` finds the untrusted query.
      const hidden = await rawGet(`/graphql#extensions=${trustedHash}&z=?query=${untrusted}`, bearer(key));
      expect(hidden.status).toBe(400);
      expect(JSON.parse(hidden.body)).toMatchObject({ error: { code: 'INVALID_INPUT', details: { target: 'contains #' } } });
      expect(hidden.body).not.toContain('Test account');
      // On every route, not only /graphql.
      for (const target of ['/healthz#x', '/api/jobs/1#?x=1', '/metrics#'])
        expect([target, (await rawGet(target, bearer(key))).status]).toEqual([target, 400]);
      // A query given twice: refused, whichever of the two a reader would take.
      for (const target of [
        `/graphql?query=${encodeURIComponent(JOBS)}&query=${untrusted}`,
        `/graphql?extensions=${trustedHash}&query=${untrusted}`,
      ]) {
        const twice = await rawGet(target, bearer(key));
        expect([target, twice.status]).toEqual([target, 400]);
        expect(twice.body).not.toContain('Test account');
      }
      // An encoded `#` inside a value is only a character of it: the trusted document runs.
      const encoded = await rawGet(
        `/graphql?extensions=${trustedHash}&variables=${encodeURIComponent(JSON.stringify({ n: 1 }))}&z=%23`,
        bearer(key),
      );
      expect([encoded.status, JSON.parse(encoded.body)]).toEqual([200, { data: { jobs: { edges: [] } } }]);
    });

    it('lets analysts and admins write their own queries (the credit history among them)', async () => {
      const { accountId: someone } = await h.account();
      for (const role of ['analyst', 'admin']) {
        const account = await h.services.accounts.create(OPERATOR, { name: role, roles: [role] });
        const { key } = await h.services.apiKeys.create(OPERATOR, account.id, role);
        const res = await post(bearer(key), {
          query: `query($a: ID) { creditHistory(accountId: $a, first: 5) { edges { node { kind amount } } } }`,
          variables: { a: someone },
        });
        expect([role, res.statusCode, res.json()]).toEqual([
          role,
          200,
          { data: { creditHistory: { edges: [{ node: { kind: 'GRANT', amount: 10 } }] } } },
        ]);
      }
    });

    it('refuses other documents on the WebSocket too', async () => {
      const { key } = await h.account();
      const client = ws(key);
      try {
        const errors = (await firstOf(client, { query: FOLLOW, variables: { id: '00000000-0000-4000-8000-000000000000' } })) as {
          message: string;
          extensions: { code: string };
        }[];
        expect(errors).toEqual([{ message: expect.stringMatching(UNTRUSTED), extensions: { code: 'INVALID_INPUT' } }]);
      } finally {
        await client.dispose();
      }
    });

    it('runs the account area’s own documents, from the manifest built with the page, for a signed-in session', async () => {
      expect(existsSync(ACCOUNT_MANIFEST)).toBe(true);
      const manifest = JSON.parse(readFileSync(ACCOUNT_MANIFEST, 'utf8')) as Record<string, string>;
      const [hash] = Object.entries(manifest).find(([, text]) => text.startsWith('query AccountMe '))!;
      const account = await h.services.accounts.create(OPERATOR, { name: 'Ada', credits: 4 });
      const link = new URL((await h.services.sessions.createLoginLink(OPERATOR, account.id)).url);
      const session = await h.request('POST', '/account/api/session', {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: new URLSearchParams(link.hash.slice(1)).get('login') }),
      });
      expect(session.statusCode).toBe(200);
      const cookie = session.headers['set-cookie'].split(';')[0];
      // The page sends exactly this: the hash alone, the cookie, and its CSRF token.
      const res = await post(
        { cookie, 'x-csrf-token': session.json<SessionBody>().csrfToken },
        { extensions: persisted(hash.replace(/^sha256:/, '')) },
      );
      expect(res.json()).toMatchObject({ data: { me: { id: account.id, name: 'Ada', credits: { available: 4, held: 0 } } } });
    });
  });
});

describe('a bad manifest', () => {
  const bad = join(dir, 'bad.json');
  // A sha1 hash (graphql-codegen's option), and a document the schema does not have.
  writeFileSync(bad, JSON.stringify({ [createHash('sha1').update(ME).digest('hex')]: ME, [sha256('{ nope }')]: '{ nope }' }));

  /** The CLI as an operator runs it, with only these variables (and PATH). */
  const mediagate = (args: string[], env: Record<string, string>) =>
    new Promise<{ code: number; out: string; stdout: string }>((resolve) =>
      execFile(
        join(process.cwd(), 'node_modules/.bin/node'),
        [join(process.cwd(), 'dist/cli/main.js'), ...args],
        { env: { PATH: process.env.PATH ?? '', MEDIAGATE_DATA_DIR: join(dir, 'data'), ...env }, timeout: 60_000 },
        (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr, stdout }),
      ),
    );

  it('stops `mediagate serve` from starting, naming each problem', async () => {
    const serve = await mediagate(['serve'], { GRAPHQL_PERSISTED_DOCUMENTS: bad, HOST: '127.0.0.1', PORT: '0' });
    expect(serve.code).not.toBe(0);
    expect(serve.out).toMatch(/GRAPHQL_PERSISTED_DOCUMENTS: .*bad\.json: .*not the SHA-256 of the text.*Cannot query field \\?"nope\\?"/);
  });

  it('is reported by `mediagate config check`, and a good one counted', async () => {
    const check = async (file: string) =>
      JSON.parse((await mediagate(['--json', 'config', 'check'], { GRAPHQL_PERSISTED_DOCUMENTS: file })).stdout) as {
        checks: { name: string; ok: boolean; detail: string }[];
      };
    const [good, broken] = await Promise.all([check(apolloManifest), check(bad)]);
    expect(good.checks.find((c) => c.name === 'trusted documents')).toEqual({
      name: 'trusted documents',
      ok: true,
      detail: `1 document(s) in ${apolloManifest}`,
    });
    const problem = broken.checks.find((c) => c.name === 'trusted documents')!;
    expect(problem.ok).toBe(false);
    expect(problem.detail).toMatch(/not the SHA-256 of the text/);
    expect(problem.detail).toMatch(/Cannot query field "nope" on type "Query"/);
  });
});
