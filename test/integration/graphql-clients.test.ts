import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql, type OperationVariables, type TypedDocumentNode } from '@apollo/client';
import { CombinedGraphQLErrors } from '@apollo/client/errors';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { Client as UrqlClient, fetchExchange } from '@urql/core';
import { ClientError, GraphQLClient } from 'graphql-request';
import { createClient, type Client as WsClient } from 'graphql-ws';
import { createHash } from 'node:crypto';
import WebSocket from 'ws';
import type { FakeSite } from '../fakes/site.fake.js';
import type { Harness } from '../support/harness.js';
import { transcriptionWorld, type TranscriptionWorld } from '../support/world.js';
import { TEST_DATABASES } from '../support/test-database.js';

/**
 * The GraphQL clients frontends use, against the gateway's doors as they are (Apollo Server over
 * HTTP, graphql-ws over WebSocket): each one runs the parse mutation (its data and the credits it
 * charged), and reads a refusal's code the way that client shows it. Apollo Client also over GET,
 * with automatic persisted queries over POST and GET, and following a transcription to its end over
 * GraphQLWsLink; graphql-ws's own client does the same.
 */
describe.each(TEST_DATABASES)('GraphQL clients (%s database)', (database) => {
  let world: TranscriptionWorld;
  let h: Harness;
  let site: FakeSite;
  beforeAll(async () => {
    world = await transcriptionWorld({ media: [{ path: '/talk.mp3', seconds: 20 }], openai: { msPerAudioSecond: 5 }, database });
    ({ h, site } = world);
    site.page(
      '/watch',
      `<html><head><title>Clip</title></head><body><video src="${site.origin}/media/clip.mp4" width="640" height="360"></video></body></html>`,
    );
  }, 60_000);
  afterAll(() => world?.close());

  const PARSE = `mutation Parse($url: String!) { parse(input: { url: $url, quality: "720" }) { media { url } credits { charged balance } } }`;
  const ME = `query Me { me { id credits { available held } } }`;
  const JOB_UPDATED = `subscription Follow($id: ID!) { jobUpdated(id: $id) { status progress result } }`;
  const START = `mutation Start($url: String!) { startTranscription(input: { mediaUrl: $url }) { id } }`;
  type ParseData = { parse: { media: { url: string }; credits: { charged: number; balance: number } } };
  /** Every request a client sent: method, and whether the document text went along. */
  const recording =
    (sent: { method: string; withText: boolean; status?: number }[]): typeof fetch =>
    async (input, init) => {
      const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      const body = typeof init?.body === 'string' ? init.body : '';
      const res = await fetch(input, init);
      sent.push({ method: init?.method ?? 'GET', withText: url.searchParams.has('query') || /"query"/.test(body), status: res.status });
      return res;
    };
  const wsClient = (key: string): WsClient =>
    createClient({
      url: `${h.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${key}` },
      retryAttempts: 0,
    });

  describe('Apollo Client 4', () => {
    // Apollo Client adds __typename to every selection: answers are compared with toMatchObject.
    const apollo = (link: ApolloLink) =>
      new ApolloClient({ link, cache: new InMemoryCache(), defaultOptions: { query: { fetchPolicy: 'no-cache' } } });
    const http = (key: string, fetchImpl: typeof fetch, useGETForQueries = false) =>
      new HttpLink({ uri: `${h.url}/graphql`, headers: { authorization: `Bearer ${key}` }, fetch: fetchImpl, useGETForQueries });
    const parse: TypedDocumentNode<ParseData, { url: string }> = gql(PARSE);
    const me: TypedDocumentNode<{ me: { id: string; credits: { available: number; held: number } } }, OperationVariables> = gql(ME);

    it('HttpLink over POST: a mutation with variables, its credits, and a refusal’s code in error.errors[0].extensions', async () => {
      const { key, accountId } = await h.account({ credits: 3 });
      const sent: { method: string; withText: boolean }[] = [];
      const client = apollo(http(key, recording(sent)));
      const { data } = await client.mutate({ mutation: parse, variables: { url: `${site.origin}/watch` } });
      expect(data?.parse).toMatchObject({ media: { url: `${site.origin}/media/clip.mp4` }, credits: { charged: 1, balance: 2 } });
      const refused = await client.mutate({ mutation: parse, variables: { url: 'http://10.0.0.1/page' } }).catch((e: unknown) => e);
      expect(CombinedGraphQLErrors.is(refused)).toBe(true);
      expect((refused as CombinedGraphQLErrors).errors[0].extensions?.code).toBe('URL_NOT_ALLOWED');
      expect(sent.map((s) => s.method)).toEqual(['POST', 'POST']);
      expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
    });

    it('HttpLink with useGETForQueries: queries over GET, an operation that cannot run refused INVALID_INPUT', async () => {
      const { key, accountId } = await h.account({ credits: 4 });
      const sent: { method: string; withText: boolean }[] = [];
      const client = apollo(http(key, recording(sent), true));
      const { data } = await client.query({ query: me });
      expect(data?.me).toMatchObject({ id: accountId, credits: { available: 4, held: 0 } });
      const refused = await client.query({ query: gql`query Nope { me { nope } }` }).catch((e: unknown) => e);
      expect((refused as CombinedGraphQLErrors).errors[0].extensions?.code).toBe('INVALID_INPUT');
      expect(sent.map((s) => s.method)).toEqual(['GET', 'GET']);
    });

    const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

    it.each([
      ['POST', false],
      ['GET', true],
    ])(
      'PersistedQueryLink over %s: the hash first, the text once when it is unknown, then the hash alone',
      async (method, useGETForHashedQueries) => {
        const { key, accountId } = await h.account({ credits: 5 });
        const sent: { method: string; withText: boolean; status?: number }[] = [];
        const link = new PersistedQueryLink({ sha256, useGETForHashedQueries }).concat(http(key, recording(sent)));
        const client = apollo(link);
        // A document of this run alone, so no earlier run registered it.
        const mine = gql(`query Mine${method} { me { id credits { available held } } }`);
        for (let i = 0; i < 2; i++)
          expect((await client.query({ query: mine })).data).toMatchObject({ me: { id: accountId, credits: { available: 5, held: 0 } } });
        // Unknown hash (400 PersistedQueryNotFound), the text with its hash (POST), then the hash alone.
        expect(sent).toEqual([
          { method, withText: false, status: 400 },
          { method: 'POST', withText: true, status: 200 },
          { method, withText: false, status: 200 },
        ]);
        // Mutations go over POST, hash first too; a refusal keeps its code.
        const parseOnce: TypedDocumentNode<ParseData, { url: string }> = gql(PARSE.replace('Parse', `Parse${method}`));
        const { data } = await client.mutate({ mutation: parseOnce, variables: { url: `${site.origin}/watch` } });
        expect(data?.parse.credits).toMatchObject({ charged: 1, balance: 4 });
        const refused = await client.mutate({ mutation: parseOnce, variables: { url: 'http://127.0.0.1:1/x' } }).catch((e: unknown) => e);
        expect((refused as CombinedGraphQLErrors).errors[0].extensions?.code).toBe('URL_NOT_ALLOWED');
        expect(sent.slice(3).map((s) => [s.method, s.withText])).toEqual([
          ['POST', false],
          ['POST', true],
          ['POST', false],
        ]);
        expect(await h.balance(accountId)).toEqual({ available: 4, held: 0 });
      },
    );

    it('GraphQLWsLink follows a started transcription to its end; an unknown job is NOT_FOUND', async () => {
      const { key, accountId } = await h.account({ credits: 3 });
      const ws = wsClient(key);
      const link = ApolloLink.split(
        ({ query }) => query.definitions.some((d) => d.kind === 'OperationDefinition' && d.operation === 'subscription'),
        new GraphQLWsLink(ws),
        http(key, fetch),
      );
      const client = apollo(link);
      try {
        const { data } = await client.mutate({ mutation: gql(START), variables: { url: `${site.origin}/talk.mp3` } });
        const id = (data as { startTranscription: { id: string } }).startTranscription.id;
        const pushes: { status: string; progress: number; result: { credits: { charged: number } } | null }[] = [];
        await new Promise<void>((resolve, reject) => {
          client.subscribe({ query: gql(JOB_UPDATED), variables: { id } }).subscribe({
            next: ({ data: d, error }) => (error ? reject(error) : pushes.push((d as { jobUpdated: (typeof pushes)[number] }).jobUpdated)),
            error: reject,
            complete: resolve,
          });
        });
        expect(pushes.at(-1)).toMatchObject({ status: 'SUCCEEDED', progress: 1, result: { credits: { charged: 1 } } });
        expect(await h.balance(accountId)).toEqual({ available: 2, held: 0 });
        const refused = await new Promise<unknown>((resolve) => {
          client
            .subscribe({ query: gql(JOB_UPDATED), variables: { id: '00000000-0000-4000-8000-000000000000' } })
            .subscribe({ next: ({ error }) => resolve(error), error: resolve, complete: () => resolve(null) });
        });
        expect((refused as CombinedGraphQLErrors).errors[0].extensions?.code).toBe('NOT_FOUND');
      } finally {
        await ws.dispose();
      }
    });
  });

  it('@urql/core: data, credits, and a refusal’s code in error.graphQLErrors', async () => {
    const { key, accountId } = await h.account({ credits: 2 });
    const client = new UrqlClient({
      url: `${h.url}/graphql`,
      exchanges: [fetchExchange],
      fetchOptions: { headers: { authorization: `Bearer ${key}` } },
    });
    const ok = await client.mutation<ParseData>(PARSE, { url: `${site.origin}/watch` }).toPromise();
    expect(ok.data?.parse.credits).toEqual({ charged: 1, balance: 1 });
    const me = await client.query(ME, {}).toPromise();
    expect(me.data.me).toEqual({ id: accountId, credits: { available: 1, held: 0 } });
    const last = await client.mutation<ParseData>(PARSE, { url: `${site.origin}/watch` }).toPromise();
    expect(last.data?.parse.credits).toEqual({ charged: 1, balance: 0 });
    const refused = await client.mutation(PARSE, { url: `${site.origin}/watch` }).toPromise();
    expect(refused.error?.graphQLErrors[0].extensions.code).toBe('INSUFFICIENT_CREDITS');
    expect(await h.balance(accountId)).toEqual({ available: 0, held: 0 });
  });

  it('graphql-request: data, credits, and a refusal’s code in ClientError.response.errors', async () => {
    const { key, accountId } = await h.account({ credits: 2 });
    const client = new GraphQLClient(`${h.url}/graphql`, { headers: { authorization: `Bearer ${key}` } });
    const data = await client.request<ParseData>(PARSE, { url: `${site.origin}/watch` });
    expect(data.parse).toEqual({ media: { url: `${site.origin}/media/clip.mp4` }, credits: { charged: 1, balance: 1 } });
    const refused = await client.request(PARSE, { url: 'ftp://example.com/x' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ClientError);
    expect((refused as ClientError).response.errors?.[0].extensions?.code).toBe('INVALID_INPUT');
    const anonymous = await new GraphQLClient(`${h.url}/graphql`).request(ME).catch((e: unknown) => e);
    expect((anonymous as ClientError).response.errors?.[0].extensions?.code).toBe('UNAUTHENTICATED');
    expect(await h.balance(accountId)).toEqual({ available: 1, held: 0 });
  });

  it('graphql-ws’s client: follows a started transcription to its end; a query over the socket is INVALID_INPUT', async () => {
    const { key, accountId } = await h.account({ credits: 2 });
    const id = (await h.gql<{ startTranscription: { id: string } }>(START, { url: `${site.origin}/talk.mp3` }, key)).data.startTranscription
      .id;
    const ws = wsClient(key);
    try {
      const pushes: { status: string; result: { credits: { charged: number; balance: number } } | null }[] = [];
      for await (const message of ws.iterate<{ jobUpdated: (typeof pushes)[number] }>({ query: JOB_UPDATED, variables: { id } }))
        pushes.push(message.data!.jobUpdated);
      expect(pushes.at(-1)).toMatchObject({ status: 'SUCCEEDED', result: { credits: { charged: 1, balance: 1 } } });
      const refused = await new Promise<unknown>((resolve) =>
        ws.subscribe({ query: ME }, { next: resolve, error: resolve, complete: () => resolve(null) }),
      );
      expect((refused as { extensions: { code: string } }[])[0].extensions.code).toBe('INVALID_INPUT');
    } finally {
      await ws.dispose();
    }
    expect(await h.balance(accountId)).toEqual({ available: 1, held: 0 });
  });
});
