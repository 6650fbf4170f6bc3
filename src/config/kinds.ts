/** The kinds of value the environment gives, shared by the variables' sections. */
import { z } from 'zod';
import { isProxyAddress } from '../addresses.js';

export const PARSE_PROVIDER_NAMES = ['builtin', 'cobalt', 'ytdlp'] as const;
export const TRANSCRIBE_PROVIDER_NAMES = ['openai', 'deepgram', 'assemblyai', 'local'] as const;

export const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');
export const seconds = (def: number) =>
  z.coerce
    .number()
    .positive()
    .max(7 * 24 * 3600)
    .default(def);
export const list = (allowed: readonly string[]) =>
  z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((p) => p.trim().toLowerCase())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(allowed as [string, ...string[]])));
export const url = z.url({ protocol: /^https?$/ });

/** TRUST_PROXY: a hop count (1 or more), or proxies' addresses separated by commas; each entry is checked on its own. */
export const proxyTrust = z.string().transform((text, ctx): number | string[] => {
  const value = text.trim();
  if (/^\d+$/.test(value)) {
    if (Number(value) >= 1) return Number(value);
    ctx.addIssue({ code: 'custom', message: 'a hop count must be at least 1 (unset: no proxy is trusted)' });
    return z.NEVER;
  }
  const entries = value.split(',').map((e) => e.trim().toLowerCase());
  entries.forEach((entry, i) => {
    if (!isProxyAddress(entry))
      ctx.addIssue({
        code: 'custom',
        path: [i],
        message: 'must be an IP address or CIDR range (or loopback, linklocal, uniquelocal); the list is separated by commas',
      });
  });
  return entries;
});
