import { isIPv4 } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which addresses a caller's URL may reach: public unicast only. Everything else (loopback,
 * private, link-local and cloud metadata, CGNAT, unique-local, multicast, reserved, and IPv6 forms
 * that embed one of those IPv4 addresses) is refused.
 */

// ipaddr's range() already names most of these; the explicit list keeps the policy readable and
// independent of what a future ipaddr release decides to call 'unicast'.
const BLOCKED_V4_CIDRS: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, incl. 169.254.169.254 metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments (incl. 192.0.0.170/171 NAT64 discovery)
  ['192.0.2.0', 24], // TEST-NET-1
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // TEST-NET-2
  ['203.0.113.0', 24], // TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved
  ['255.255.255.255', 32],
];
const BLOCKED_V4 = BLOCKED_V4_CIDRS.map(([a, bits]) => [ipaddr.IPv4.parse(a), bits] as const);

const V6 = (a: string, bits: number) => [ipaddr.IPv6.parse(a), bits] as const;
/** AWS's IPv6 metadata endpoint; inside fc00::/7 already but named so nobody "fixes" that away. */
const METADATA_V6 = V6('fd00:ec2::254', 128);
const MAPPED = V6('::ffff:0:0', 96);
const COMPATIBLE = V6('::', 96);
const NAT64 = V6('64:ff9b::', 96);
const SIX_TO_FOUR = V6('2002::', 16);
const TEREDO = V6('2001::', 32);

function v4Allowed(ip: ipaddr.IPv4): boolean {
  return ip.range() === 'unicast' && !BLOCKED_V4.some(([net, bits]) => ip.match(net, bits));
}

/**
 * The IPv4 addresses an IPv6 address leads to, or null when it embeds none. These forms are not
 * 'unicast' to ipaddr, but DNS64 networks hand out 64:ff9b:: addresses for every IPv4-only site,
 * so they are judged by the IPv4 address they reach rather than refused wholesale.
 */
function embeddedV4(ip: ipaddr.IPv6): ipaddr.IPv4[] | null {
  const bytes = ip.toByteArray();
  const v4 = (offset: number, invert = false) => new ipaddr.IPv4(bytes.slice(offset, offset + 4).map((b) => (invert ? b ^ 0xff : b)));
  if (ip.match(...MAPPED) || ip.match(...NAT64)) return [v4(12)];
  if (ip.match(...SIX_TO_FOUR)) return [v4(2)];
  // Teredo: server address in bits 32-63, client address stored inverted in the last 32 bits.
  if (ip.match(...TEREDO)) return [v4(4), v4(12, true)];
  return null;
}

/** True when a caller's URL may connect to this literal address (IPv4 or IPv6, no brackets). */
export function isPublicAddress(address: string): boolean {
  // Only dotted quads: URLs and DNS answers arrive normalised, so any other spelling is refused.
  if (!address.includes(':')) return isIPv4(address) && v4Allowed(ipaddr.IPv4.parse(address));
  // ipaddr reads ::a.b.c.d as IPv4-mapped; the WHATWG serialisation (all hex) keeps mapped and
  // compatible apart, and refuses zone ids, which no caller's URL can carry anyway.
  let canonical: string;
  try {
    canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return false;
  }
  if (!ipaddr.IPv6.isValid(canonical)) return false;
  const v6 = ipaddr.IPv6.parse(canonical);
  // ::a.b.c.d is deprecated and never legitimately used; it also covers :: and ::1.
  if (v6.match(...COMPATIBLE)) return false;
  if (v6.match(...METADATA_V6)) return false;
  const inner = embeddedV4(v6);
  if (inner) return inner.every(v4Allowed);
  return v6.range() === 'unicast';
}
