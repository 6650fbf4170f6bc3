import proxyAddr from '@fastify/proxy-addr';
import { isIP } from 'node:net';

/**
 * How addresses are written in the configuration (FETCH_ALLOW_HOSTS, TRUST_PROXY): the syntax the
 * settings are checked against when read, and the keys the guarded client (net/) compares with.
 */

/**
 * Normalises FETCH_ALLOW_HOSTS entries to the `host:port` keys hostPortOf produces (lower-case,
 * IPv6 compressed in brackets, numeric port). Throws on an entry that is not host:port.
 */
export function parseAllowHosts(entries: readonly string[]): Set<string> {
  const keys = new Set<string>();
  for (const raw of entries) {
    const entry = raw.trim();
    if (!entry) continue;
    const m = /^(.+):(\d{1,5})$/.exec(entry);
    let host: string | undefined;
    try {
      host = m ? new URL(`http://${m[1]}/`).hostname : undefined;
    } catch {
      host = undefined;
    }
    const port = m ? Number(m[2]) : NaN;
    if (!host || !m || port < 1 || port > 65535) throw new Error(`FETCH_ALLOW_HOSTS entry "${entry}" is not host:port.`);
    keys.add(`${host}:${port}`);
  }
  return keys;
}

/** The `host:port` key of a URL, as parseAllowHosts spells it (default port by scheme). */
export function hostPortOf(url: URL): string {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return `${url.hostname.toLowerCase()}:${port}`;
}

const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** Whether a TRUST_PROXY list entry is an IP address, a CIDR range or netmask, or one of proxy-addr's names. */
export function isProxyAddress(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  // proxy-addr would also take "10" or "1.2.3" (inet_aton forms) as addresses: not what an operator means.
  if (isIP(entry.split('/')[0]) === 0) return false;
  try {
    proxyAddr.compile([entry]);
    return true;
  } catch {
    return false;
  }
}
