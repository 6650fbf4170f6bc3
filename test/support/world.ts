import type { Logger } from 'pino';
import { startFakeAssemblyAi } from '../fakes/assemblyai.fake.js';
import { startFakeDeepgram } from '../fakes/deepgram.fake.js';
import { startFakeOpenAi } from '../fakes/openai.fake.js';
import { startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { startFakeWebhookReceiver, type FakeWebhookReceiver } from '../fakes/webhook-receiver.fake.js';
import { pageHtml, type PageSpec } from './factories.js';
import { createHarness, type Harness } from './harness.js';
import { makeMedia } from './media.js';
import { serveLibrary } from './media-library.js';
import type { TestDatabaseKind } from './test-database.js';

export type FakeOpenAi = Awaited<ReturnType<typeof startFakeOpenAi>>;
export type FakeOpenAiOptions = NonNullable<Parameters<typeof startFakeOpenAi>[0]>;
export type FakeDeepgram = Awaited<ReturnType<typeof startFakeDeepgram>>;
export type FakeAssemblyAi = Awaited<ReturnType<typeof startFakeAssemblyAi>>;

/** A transcription provider a world can wire a gateway to. */
export type WorldProvider = 'openai' | 'deepgram' | 'assemblyai';

/**
 * One file the fake site serves: real media made with ffmpeg (`seconds`, `video`, `audio` as
 * makeMedia takes them), or the given bytes. The content type follows the extension unless named.
 */
export type WorldMedia =
  | { path: string; seconds: number; video?: boolean; audio?: boolean; contentType?: string }
  | { path: string; bytes: Buffer; contentType?: string };

/** How one gateway on the world is started. */
export interface WorldGatewayOptions {
  /** The providers it transcribes with, in order (TRANSCRIBE_PROVIDERS); every fake the world started unless said. */
  providers?: WorldProvider[];
  /** Added to or overriding the wired settings. */
  env?: Record<string, string>;
  logger?: Logger;
  database?: TestDatabaseKind;
  /** Transcriptions run on the job queue (default), or only in the request (the queue off). */
  queue?: boolean;
}

export interface TranscriptionWorldOptions extends WorldGatewayOptions {
  /** The fake OpenAI (always started; these are its options). */
  openai?: FakeOpenAiOptions;
  /** A fake Deepgram with this key. */
  deepgram?: { apiKey: string };
  /** A fake AssemblyAI with this key (polled every 20 ms). */
  assemblyai?: { apiKey: string; speakerLabels?: boolean };
  /** What the fake site serves. */
  media?: WorldMedia[];
  /** Pages on the fake site, by path: HTML, or what a page holds (see pageHtml). */
  pages?: Record<string, string | PageSpec>;
  /** Fixture pages on the fake site, by path: the file on disk each is read from (see FakeSite.pageFromDisk). */
  pagesFromDisk?: Record<string, string>;
  /** The media library (media-library.ts: the ladder, HLS, DASH, audio, a cover) on the fake site, under its own paths. */
  library?: boolean;
  /** The fake site's own options. */
  site?: Parameters<typeof startFakeSite>[0];
  /**
   * A fake webhook receiver (`receiver`) the gateway may deliver to, retrying a second apart with a
   * timeout of a second, so that a test waits its retries out (`env` may say otherwise).
   */
  webhookReceiver?: boolean;
  /** More hosts the gateway may fetch from (a second site), beside the fake site. */
  allowHosts?: string[];
  /** false: no gateway yet (the test starts its own with `gateway()`). */
  gateway?: boolean;
}

/** A transcription test's upstreams and the gateway wired to them, closed together. */
export interface TranscriptionWorld {
  site: FakeSite;
  openai: FakeOpenAi;
  deepgram?: FakeDeepgram;
  assemblyai?: FakeAssemblyAi;
  /** The webhook receiver (throws when the world was started without `webhookReceiver`). */
  readonly receiver: FakeWebhookReceiver;
  /** The gateway started with the world (throws when it was started with `gateway: false`). */
  readonly h: Harness;
  /** The settings that wire a gateway to this world's site and providers. */
  env(providers?: WorldProvider[]): Record<string, string>;
  /** Another gateway wired to this world; closed with it (or earlier, by the test). */
  gateway(options?: WorldGatewayOptions): Promise<Harness>;
  /** Closes every gateway, then the fakes; safe to call twice. */
  close(): Promise<void>;
}

const CONTENT_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  m4a: 'audio/mp4',
  ogg: 'audio/ogg',
  mp4: 'video/mp4',
  webm: 'video/webm',
  ts: 'video/mp2t',
};

function contentTypeOf(path: string): string {
  const ext = path.split('.').at(-1) ?? '';
  const type = CONTENT_TYPES[ext];
  if (!type) throw new Error(`world: name the content type of ${path}`);
  return type;
}

/**
 * Starts the fake site with its media, the fake providers asked for and (unless `gateway: false`)
 * a gateway wired to them, on the job queue like production. On a failure half-way, what was
 * started is closed before the error is thrown.
 */
export async function transcriptionWorld(options: TranscriptionWorldOptions = {}): Promise<TranscriptionWorld> {
  const closers: (() => Promise<void>)[] = [];
  const closeAll = async () => {
    // Gateways first (they hold connections to the fakes), then the fakes, in reverse order of start.
    for (const close of closers.splice(0).reverse()) await close();
  };
  try {
    const site = await startFakeSite(options.site);
    closers.push(() => site.close());
    for (const m of options.media ?? []) {
      const body =
        'bytes' in m ? m.bytes : makeMedia({ seconds: m.seconds, video: m.video, audio: m.audio, ext: m.path.split('.').at(-1) });
      site.file(m.path, body, m.contentType ?? contentTypeOf(m.path));
    }
    for (const [path, page] of Object.entries(options.pages ?? {})) site.page(path, typeof page === 'string' ? page : pageHtml(page));
    for (const [path, file] of Object.entries(options.pagesFromDisk ?? {})) site.pageFromDisk(path, file);
    if (options.library) await serveLibrary(site);
    const openai = await startFakeOpenAi(options.openai);
    closers.push(() => openai.close());
    const deepgram = options.deepgram ? await startFakeDeepgram(options.deepgram) : undefined;
    if (deepgram) closers.push(() => deepgram.close());
    const assemblyai = options.assemblyai ? await startFakeAssemblyAi(options.assemblyai) : undefined;
    if (assemblyai) closers.push(() => assemblyai.close());
    const receiver = options.webhookReceiver ? await startFakeWebhookReceiver() : undefined;
    if (receiver) closers.push(() => receiver.close());
    const webhookEnv = receiver ? { WEBHOOK_RETRY_DELAY_SECONDS: '1', WEBHOOK_TIMEOUT_SECONDS: '1' } : {};
    const allowHosts = [site.hostPort, ...(receiver ? [receiver.hostPort] : []), ...(options.allowHosts ?? [])];

    const started: WorldProvider[] = [...(deepgram ? ['deepgram' as const] : []), ...(assemblyai ? ['assemblyai' as const] : []), 'openai'];
    const wired = (provider: WorldProvider): Record<string, string> => {
      if (provider === 'openai') {
        return { OPENAI_BASE_URL: openai.baseUrl, ...(options.openai?.apiKey ? { OPENAI_API_KEY: options.openai.apiKey } : {}) };
      }
      if (provider === 'deepgram' && deepgram && options.deepgram) {
        return { DEEPGRAM_BASE_URL: deepgram.baseUrl, DEEPGRAM_API_KEY: options.deepgram.apiKey };
      }
      if (provider === 'assemblyai' && assemblyai && options.assemblyai) {
        return { ASSEMBLYAI_BASE_URL: assemblyai.baseUrl, ASSEMBLYAI_API_KEY: options.assemblyai.apiKey, ASSEMBLYAI_POLL_SECONDS: '0.02' };
      }
      throw new Error(`world: no fake ${provider} was started`);
    };
    let first: Harness | undefined;
    const world: TranscriptionWorld = {
      site,
      openai,
      deepgram,
      assemblyai,
      get receiver(): FakeWebhookReceiver {
        if (!receiver) throw new Error('world: started without `webhookReceiver`');
        return receiver;
      },
      get h(): Harness {
        if (!first) throw new Error('world: started with `gateway: false`; start one with world.gateway()');
        return first;
      },
      env(providers = started) {
        return Object.assign(
          { FETCH_ALLOW_HOSTS: allowHosts.join(','), TRANSCRIBE_PROVIDERS: providers.join(','), ...webhookEnv },
          ...providers.map(wired),
        );
      },
      async gateway(o = {}) {
        const h = await createHarness({ ...world.env(o.providers), ...o.env }, o.logger, {
          queue: o.queue ?? true,
          database: o.database,
        });
        let open = true;
        const close = h.close.bind(h);
        const once = async () => {
          if (open) (open = false), await close();
        };
        h.close = once;
        closers.push(once);
        return h;
      },
      close: closeAll,
    };
    if (options.gateway !== false) {
      first = await world.gateway({
        providers: options.providers,
        env: options.env,
        logger: options.logger,
        database: options.database,
        queue: options.queue,
      });
    }
    return world;
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/** Starts a transcription job through GraphQL (startTranscription) as `key`; its id. */
export async function startTranscription(h: Harness, key: string, input: Record<string, unknown>): Promise<string> {
  const started = await h.gql<{ startTranscription: { id: string } }>(
    `mutation($i: TranscribeInput!) { startTranscription(input: $i) { id } }`,
    { i: input },
    key,
  );
  return started.data.startTranscription.id;
}
