import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A real OpenAI verbose_json answer (whisper-1, language "english"), as stored in test/fixtures/openai/verbose_json.json. */
export const verboseJsonFixture = JSON.parse(readFileSync(new URL('../fixtures/openai/verbose_json.json', import.meta.url), 'utf8')) as {
  task: string;
  language: string;
  duration: number;
  text: string;
  segments: {
    id: number;
    seek: number;
    start: number;
    end: number;
    text: string;
    tokens: number[];
    temperature: number;
    avg_logprob: number;
    compression_ratio: number;
    no_speech_prob: number;
  }[];
};

/** One upload as the fake saw it. */
export interface FakeOpenAiRequest {
  fields: Record<string, string>;
  /** Every timestamp_granularities[] value sent. */
  granularities: string[];
  fileName: string;
  fileBytes: number;
  /** The uploaded file itself. */
  audio: Buffer;
  authorization: string | undefined;
  headers: IncomingHttpHeaders;
  /** When (performance.now()) the caller closed the connection before the answer was sent; null while it waits or once answered. */
  closedAt: number | null;
}

/** A canned answer; `raw` sends `body` as the literal response text (for malformed JSON), `delayMs` stalls first. */
export interface FakeOpenAiResponse {
  status: number;
  body: unknown;
  raw?: boolean;
  delayMs?: number;
}

const SENTENCES = ['Welcome to the show.', 'Today we talk about sound.', 'It travels as a wave.', 'Thanks for listening.'];
const NAMES: Record<string, string> = { en: 'english', de: 'german', fr: 'french', es: 'spanish', zh: 'chinese' };
/** The gateway uploads 32 kbit/s MP3: 4000 bytes per second of audio. */
const BYTES_PER_SECOND = 4000;

/** OpenAI's error body shape. */
const openAiError = (message: string, param: string | null, code: string | null) => ({
  error: { message, type: 'invalid_request_error', param, code },
});

/**
 * A local stand-in for `POST /v1/audio/transcriptions`: parses the multipart upload as OpenAI does,
 * refuses a wrong key with OpenAI's 401 body, and by default answers verbose_json whose 2.5 s
 * segments cover the audio length implied by the upload's size. `respond` may override any answer.
 */
export async function startFakeOpenAi(
  opts: {
    apiKey?: string;
    respond?: (req: FakeOpenAiRequest) => FakeOpenAiResponse | undefined;
    /** Work like a real server: this many milliseconds per second of audio before answering. */
    msPerAudioSecond?: number;
  } = {},
) {
  const requests: FakeOpenAiRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer(async (req, res) => {
    const send = (status: number, body: unknown, raw = false) => {
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(raw ? String(body) : JSON.stringify(body));
    };
    if (req.method !== 'POST' || req.url !== '/v1/audio/transcriptions') {
      req.resume();
      return send(404, openAiError(`Invalid URL (${req.method} ${req.url})`, null, null));
    }
    if (opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      req.resume();
      // OpenAI echoes a masked key; the adapter must never pass this text on.
      const given = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      return send(
        401,
        openAiError(
          `Incorrect API key provided: ${given.slice(0, 3)}***${given.slice(-4)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
          null,
          'invalid_api_key',
        ),
      );
    }
    let form: FormData;
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      form = await new Request('http://fake.invalid/', {
        method: 'POST',
        headers: { 'content-type': req.headers['content-type'] ?? '' },
        body: Buffer.concat(chunks),
      }).formData();
    } catch {
      return send(400, openAiError('Could not parse multipart form', null, null));
    }
    const granularities = form.getAll('timestamp_granularities[]').map(String);
    const fields: Record<string, string> = {};
    let fileName = '';
    let fileBytes = 0;
    let audio = Buffer.alloc(0);
    for (const [k, v] of form.entries()) {
      if (typeof v === 'string') fields[k] = v;
      else if (k === 'file') {
        fileName = v.name;
        fileBytes = v.size;
        audio = Buffer.from(await v.arrayBuffer());
      }
    }
    const seen: FakeOpenAiRequest = {
      fields,
      granularities,
      fileName,
      fileBytes,
      audio,
      authorization: req.headers.authorization,
      headers: req.headers,
      closedAt: null,
    };
    requests.push(seen);
    res.on('close', () => {
      if (!res.writableEnded) seen.closedAt = performance.now();
    });
    const custom = opts.respond?.(seen);
    if (custom) {
      if (custom.delayMs) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(() => {
            timers.delete(t);
            resolve();
          }, custom.delayMs);
          timers.add(t);
        });
      }
      return send(custom.status, custom.body, custom.raw);
    }
    if (!fileName) return send(400, openAiError("'file' is a required property", 'file', null));
    if (!fields.model) return send(400, openAiError('you must provide a model parameter', 'model', null));
    const duration = Math.max(1, Math.round((fileBytes / BYTES_PER_SECOND) * 100) / 100);
    if (opts.msPerAudioSecond) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          timers.delete(t);
          resolve();
        }, duration * opts.msPerAudioSecond!);
        timers.add(t);
      });
    }
    const segments = [];
    const words: { word: string; start: number; end: number }[] = [];
    for (let i = 0; i * 2.5 < duration; i++) {
      const start = i * 2.5;
      const end = Math.min(duration, start + 2.5);
      const sentence = SENTENCES[i % SENTENCES.length];
      segments.push({
        id: i,
        seek: Math.floor(start / 30) * 3000,
        start,
        end,
        text: ` ${sentence}`,
        tokens: [50364 + i, 50489 + i],
        temperature: 0,
        avg_logprob: -0.25,
        compression_ratio: 1.1,
        no_speech_prob: 0.01,
      });
      // OpenAI's word list: words without punctuation, each with its own span, at the top level.
      const list = sentence.replace(/[.,!?]/g, '').split(' ');
      const step = (end - start) / list.length;
      list.forEach((word, j) =>
        words.push({
          word,
          start: Math.round((start + j * step) * 100) / 100,
          end: Math.round((start + (j + 1) * step * 0.9) * 100) / 100,
        }),
      );
    }
    send(200, {
      task: 'transcribe',
      language: fields.language ? (NAMES[fields.language] ?? fields.language) : 'english',
      duration,
      text: segments.map((s) => s.text).join(''),
      ...(granularities.includes('word') ? { words } : {}),
      ...(granularities.includes('segment') || !granularities.length ? { segments } : {}),
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        timers.forEach(clearTimeout);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
