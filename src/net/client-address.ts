import proxyAddr from '@fastify/proxy-addr';
import type { IncomingMessage } from 'node:http';

/**
 * Which proxies in front of the gateway are believed when they name the client in X-Forwarded-For
 * (TRUST_PROXY): none (null), the nearest `n` hops, or the proxies at these addresses.
 */
export type ProxyTrust = number | readonly string[] | null;

/** For each address in the chain (hop 0: the connection's peer), whether it is a trusted proxy; proxy-addr's form. */
export type TrustFunction = (address: string, hop: number) => boolean;

/** proxy-addr's names for whole address classes. */
/**
 * The one rule for "who is the client" (Fastify's `trustProxy`, and the WebSocket upgrade through
 * clientAddress). A hop count is given as a function because Fastify refuses a bare number (it
 * cannot check the peer): the operator who sets one says the gateway is reachable only through them.
 */
export function trustFunction(trust: ProxyTrust): TrustFunction {
  if (trust === null) return () => false;
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return proxyAddr.compile([...trust]);
}

/** The client's address of a raw request (an upgrade), by the same rule Fastify applies to req.ip. */
export function clientAddress(req: IncomingMessage, trust: TrustFunction): string {
  return proxyAddr(req, trust);
}
