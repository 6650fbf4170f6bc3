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

export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({ level: config.logLevel, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { service: 'mediagate' } });
}
