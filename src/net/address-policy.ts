import ipaddr from 'ipaddr.js';

/**
 * Which addresses a caller's URL may reach: public unicast only. Everything else (loopback,
 * private, link-local and cloud metadata, CGNAT, unique-local, multicast, reserved, and IPv6 forms
 * that embed one of those IPv4 addresses) is refused.
 */
const BLOCKED_V4_CIDRS: Array<[string, number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
const BLOCKED_V4 = BLOCKED_V4_CIDRS.map(([a, bits]) => [ipaddr.IPv4.parse(a), bits] as const);
/** AWS's IPv6 metadata endpoint, inside fd00::/7 already but named for the reader. */
const METADATA_V6 = ipaddr.IPv6.parse('fd00:ec2::254');

function v4Allowed(ip: ipaddr.IPv4): boolean {
  return ip.range() === 'unicast' && !BLOCKED_V4.some(([net, bits]) => ip.match(net, bits));
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo), if any. */
function embeddedV4(ip: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = ip.parts;
  if (ip.isIPv4MappedAddress()) return ip.toIPv4Address();
  const bytes = ip.toByteArray();
  const v4 = (o: number) => new ipaddr.IPv4(bytes.slice(o, o + 4));
  if (p.slice(0, 6).every((x) => x === 0)) return v4(12); // ::a.b.c.d (deprecated compatible form)
  if (ip.match(ipaddr.IPv6.parse('64:ff9b::'), 96) || ip.match(ipaddr.IPv6.parse('64:ff9b:1::'), 48)) return v4(12);
  if (p[0] === 0x2002) return v4(2); // 6to4
  if (p[0] === 0x2001 && p[1] === 0) {
    // Teredo: the client's address is stored inverted in the last 32 bits.
    return new ipaddr.IPv4(bytes.slice(12, 16).map((b) => b ^ 0xff));
  }
  return null;
}

/** True when a caller's URL may connect to this literal address. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv4') return v4Allowed(ip as ipaddr.IPv4);
  const v6 = ip as ipaddr.IPv6;
  if (v6.zoneId) return false;
  const inner = embeddedV4(v6);
  if (inner) return v4Allowed(inner);
  if (v6.match(METADATA_V6, 128)) return false;
  return v6.range() === 'unicast';
}

/** Normalises FETCH_ALLOW_HOSTS entries to `host:port` with lower-case hosts (IPv6 in brackets). */
export function parseAllowHosts(entries: readonly string[]): Set<string> {
  return new Set(entries.map((e) => e.trim().toLowerCase()).filter(Boolean));
}

/** The `host:port` key of a URL, as the allow list spells it. */
export function hostPortOf(url: URL): string {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return `${url.hostname.toLowerCase()}:${port}`;
}
