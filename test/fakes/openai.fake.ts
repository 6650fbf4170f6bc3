import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/** OpenAI's documented verbose_json answer, as stored in the fixture. */
export const verboseJsonFixture = JSON.parse(readFileSync(join(process.cwd(), 'test/fixtures/openai/verbose_json.json'), 'utf8'));

export interface FakeOpenAiRequest {
  fields: Record<string, string>;
  fileName: string;
  fileBytes: number;
  authorization: string | undefined;
  headers: IncomingHttpHeaders;
}

const SENTENCES = ['Welcome to the show.', 'Today we talk about sound.', 'It travels as a wave.', 'Thanks for listening.'];

/**
 * A local stand-in for `POST /v1/audio/transcriptions`: parses the multipart upload as OpenAI does,
 * refuses a wrong key with OpenAI's error body, and answers verbose_json whose segments cover the
 * uploaded audio's length (told by the caller via `durationOf`, default 2.5 s per 10 kB of 32 kbps MP3).
 */
export async function startFakeOpenAi(opts: {
  apiKey?: string;
  respond?: (req: FakeOpenAiRequest) => { status: number; body: unknown; delayMs?: number } | undefined;
} = {}) {
  const requests: FakeOpenAiRequest[] = [];
  const server = createServer(async (req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || req.url !== '/v1/audio/transcriptions') return send(404, { error: { message: 'Not found', type: 'invalid_request_error' } });
    if (opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      return send(401, { error: { message: 'Incorrect API key provided: sk-***. You can find your API key at https://platform.openai.com/account/api-keys.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const form = await new Request('http://fake/', { method: 'POST', headers: req.headers as Record<string, string>, body: Buffer.concat(chunks) }).formData();
    const fields: Record<string, string> = {};
    let fileName = '';
    let fileBytes = 0;
    for (const [k, v] of form.entries()) {
      if (typeof v === 'string') fields[k] = v;
      else {
        fileName = v.name;
        fileBytes = v.size;
      }
    }
    const seen: FakeOpenAiRequest = { fields, fileName, fileBytes, authorization: req.headers.authorization, headers: req.headers };
    requests.push(seen);
    const custom = opts.respond?.(seen);
    if (custom) {
      if (custom.delayMs) await new Promise((r) => setTimeout(r, custom.delayMs));
      return send(custom.status, custom.body);
    }
    if (!fields.model) return send(400, { error: { message: "you must provide a model parameter", type: 'invalid_request_error', param: 'model' } });
    if (!fileName) return send(400, { error: { message: "'file' is a required property", type: 'invalid_request_error', param: 'file' } });
    // 32 kbps MP3: 4000 bytes a second.
    const duration = Math.max(1, Math.round((fileBytes / 4000) * 100) / 100);
    const segments = [];
    for (let start = 0, i = 0; start < duration; start += 2.5, i++) {
      const end = Math.min(duration, start + 2.5);
      segments.push({ id: i, seek: 0, start, end, text: ` ${SENTENCES[i % SENTENCES.length]}`, tokens: [50364], temperature: 0, avg_logprob: -0.25, compression_ratio: 1.1, no_speech_prob: 0.01 });
    }
    send(200, {
      task: 'transcribe',
      language: fields.language ? ({ en: 'english', de: 'german', fr: 'french' } as Record<string, string>)[fields.language] ?? fields.language : 'english',
      duration,
      text: segments.map((s) => s.text.trim()).join(' '),
      segments,
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
