import { pino, type Logger } from 'pino';
import type { Config } from './config.js';

/** Paths that may hold secrets are censored wherever they appear in a log line. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'apiKey',
  'key',
  '*.apiKey',
  '*.key',
  '*.authorization',
  // The account area's session: the cookie, the header that sets it, its CSRF token, a login link's token.
  'req.headers.cookie',
  'headers.cookie',
  '*.cookie',
  'res.headers["set-cookie"]',
  'req.headers["x-csrf-token"]',
  'csrfToken',
  '*.csrfToken',
  'token',
  '*.token',
];

/**
 * A stream URL's token is a credential for its lifetime (no Authorization header goes with it), so
 * wherever a URL or path is written down (request logs, traces) the token is left out.
 */
export function withoutStreamTokens(text: string): string {
  // A route's own name (`/api/streams/:token`) is no token.
  return text.replace(/\/api\/streams\/(?!:token\b)[^/?#\s"']+/g, '/api/streams/[redacted]');
}

/** How a request appears in the log lines Fastify writes (its own fields), its URL without stream tokens. */
export function loggedRequest(req: {
  method?: string;
  url?: string;
  headers?: Record<string, unknown>;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number } | null;
}) {
  return {
    method: req.method,
    url: req.url === undefined ? undefined : withoutStreamTokens(req.url),
    version: req.headers?.['accept-version'],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({ level: config.logLevel, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { service: 'mediagate' } });
}
