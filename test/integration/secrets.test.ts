import { Writable } from 'node:stream';
import { pino } from 'pino';
import { createLogger, REDACT_PATHS } from '../../src/logger.js';
import { parseBody } from '../support/bodies.js';
import { transcriptionWorld } from '../support/world.js';

describe('secrets', () => {
  it('never reach the logs: not the API key, not a provider key, not on failure paths', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    // The service's own logger configuration, at its most talkative, writing into memory.
    const logger = pino({ level: 'trace', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink);
    // The provider is given another key than the one the fake takes: it refuses, and says so.
    const world = await transcriptionWorld({
      openai: { apiKey: 'sk-the-right-one' },
      media: [{ path: '/a.mp3', seconds: 2 }],
      env: { OPENAI_API_KEY: 'sk-provider-secret-1234' },
      logger,
      queue: false,
    });
    const { h, site } = world;
    let streamUrl = '';
    try {
      const { key } = await h.account({ credits: 5 });
      await h.rest('/api/parse', { url: `${site.origin}/missing` }, key);
      await h.rest('/api/transcribe', { mediaUrl: `${site.origin}/a.mp3` }, key); // the provider refuses our key
      await h.rest('/api/parse', { url: 'https://x.example/' }, `${key.slice(0, -1)}Z`);
      await h.gql('{ me { id } }', {}, key);
      // A stream URL is a credential for its lifetime: its token never reaches the logs either.
      const streamed = await h.rest('/api/parse', { url: `${site.origin}/a.mp3`, stream: true }, key);
      expect(streamed.statusCode).toBe(200);
      streamUrl = parseBody(streamed).media.url;
      const path = new URL(streamUrl).pathname;
      expect(path).toMatch(/^\/api\/streams\/.{40,}/);
      expect((await h.request('GET', path)).statusCode).toBe(200);
      expect((await h.request('GET', `${path}x`)).statusCode).toBe(404);
    } finally {
      await world.close();
    }
    const log = lines.join('');
    expect(log.length).toBeGreaterThan(1000);
    expect(log).toContain('provider failed');
    expect(log).not.toMatch(/mg_live_[0-9A-Za-z]{12}_[0-9A-Za-z]{10}/);
    expect(log).not.toContain('sk-provider-secret-1234');
    expect(log).toContain('/api/streams/');
    expect(log).not.toContain(new URL(streamUrl).pathname.slice('/api/streams/'.length, '/api/streams/'.length + 24));
  });

  it('the logger censors authorization headers and key fields wherever they appear', () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (c, _e, d) => (lines.push(c.toString()), d()) });
    const logger = pino({ level: 'info', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink);
    logger.info({ req: { headers: { authorization: 'Bearer mg_live_x' } }, apiKey: 'sk-1', nested: { key: 'k-2' } }, 'x');
    expect(lines.join('')).not.toMatch(/mg_live_x|sk-1|k-2/);
    expect(createLogger({ logLevel: 'silent' }).level).toBe('silent');
  });
});
