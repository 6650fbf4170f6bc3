import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, isIP, type AddressInfo, type Socket } from 'node:net';
import { parseAllowHosts } from '../addresses.js';
import { isPublicAddress } from './address-policy.js';

/** A forward proxy for one external program's run, and what it refused. */
export interface GuardedProxy {
  /** `http://user:token@127.0.0.1:port`, for the program's --proxy option. */
  url: string;
  /** Targets refused because they are not public (host:port). */
  refused: string[];
  close(): Promise<void>;
}

/**
 * Programs that fetch by themselves (yt-dlp) are pointed at this proxy, so every connection they
 * make, redirects included, meets the same rules as the guarded client: the proxy resolves the
 * name itself, refuses unless every address is public (or host:port is allow-listed), and connects
 * to the address it checked. A random password keeps other local processes from using it.
 */
const CHALLENGE = 'Basic realm="mediagate"';

/** A TCP port as a request names it: 1-65535, else null (net.connect throws on anything else). */
function portOf(digits: string): number | null {
  if (!/^\d{1,5}$/.test(digits)) return null;
  const port = Number(digits);
  return port >= 1 && port <= 65535 ? port : null;
}

export async function startGuardedProxy(
  allowHosts: readonly string[],
  /** `maxBytes`: what all answers together may bring in; past it every connection is cut. `onBytes` hears of each chunk. */
  limits: { maxBytes?: number; onBytes?: (n: number) => void } = {},
): Promise<GuardedProxy> {
  const allowed = parseAllowHosts(allowHosts);
  let passed = 0;
  /** Counts what comes in from upstream; false (and every connection cut) once past the cap. */
  const count = (n: number): boolean => {
    passed += n;
    limits.onBytes?.(n);
    if (passed <= (limits.maxBytes ?? Number.POSITIVE_INFINITY)) return true;
    for (const s of sockets) s.destroy();
    return false;
  };
  const token = randomBytes(16).toString('hex');
  const expectedAuth = `Basic ${Buffer.from(`mediagate:${token}`).toString('base64')}`;
  const refused: string[] = [];
  const sockets = new Set<Socket>();

  /** The address to connect to for host:port, or null when it may not be reached. */
  const resolve = async (host: string, port: number): Promise<string | null> => {
    const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
    const key = `${isIP(bare) === 6 ? `[${bare}]` : bare}:${port}`;
    if (allowed.has(key)) return bare;
    const addresses = isIP(bare) ? [bare] : (await lookup(bare, { all: true }).catch(() => [])).map((a) => a.address);
    if (!addresses.length || addresses.some((a) => !isPublicAddress(a))) {
      refused.push(key);
      return null;
    }
    return addresses[0];
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    // The challenge names the scheme: clients that send credentials only when asked (ffmpeg) then send them.
    if (req.headers['proxy-authorization'] !== expectedAuth) return void res.writeHead(407, { 'proxy-authenticate': CHALLENGE }).end();
    let target: URL;
    try {
      target = new URL(req.url ?? '');
    } catch {
      return void res.writeHead(400).end();
    }
    const port = target.port ? portOf(target.port) : 80;
    if (target.protocol !== 'http:' || port === null) return void res.writeHead(400).end();
    resolve(target.hostname, port)
      .then((address) => {
        if (!address) return void res.writeHead(403).end();
        const headers = { ...req.headers };
        delete headers['proxy-authorization'];
        delete headers['proxy-connection'];
        const upstream = httpRequest(
          { host: address, port, method: req.method, path: target.pathname + target.search, headers, setHost: false },
          (up) => {
            up.on('error', () => res.destroy());
            try {
              res.writeHead(up.statusCode ?? 502, up.headers);
            } catch {
              // A status or header Node will not repeat: the answer cannot be relayed.
              return void (up.destroy(), res.destroy());
            }
            up.on('data', (chunk: Buffer) => {
              if (!count(chunk.length)) return void (up.destroy(), res.destroy());
              if (!res.write(chunk)) up.pause();
            });
            res.on('drain', () => up.resume());
            res.on('close', () => up.destroy());
            up.on('end', () => res.end());
          },
        );
        upstream.on('error', () => res.destroy());
        req.on('error', () => upstream.destroy());
        req.pipe(upstream);
      })
      // Whatever a hostile request makes throw ends that request, never the process.
      .catch(() => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    if (req.headers['proxy-authorization'] !== expectedAuth)
      return void client.end(`HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: ${CHALLENGE}\r\n\r\n`);
    const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(req.url ?? '');
    const port = m ? portOf(m[2]) : null;
    if (!m || port === null) return void client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
    resolve(m[1], port)
      .then((address) => {
        if (!address) return void client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
        const upstream = connect(port, address, () => {
          client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          if (head.length) upstream.write(head);
          upstream.on('data', (chunk: Buffer) => {
            if (!count(chunk.length)) return void (upstream.destroy(), client.destroy());
            if (!client.write(chunk)) upstream.pause();
          });
          client.on('drain', () => upstream.resume());
          upstream.on('end', () => client.end());
          client.pipe(upstream);
        });
        sockets.add(upstream);
        upstream.on('close', () => sockets.delete(upstream));
        upstream.on('error', () => client.destroy());
      })
      // Whatever a hostile request makes throw ends that tunnel, never the process.
      .catch(() => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://mediagate:${token}@127.0.0.1:${port}`,
    refused,
    close: () =>
      new Promise<void>((resolveClose) => {
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
        server.close(() => resolveClose());
      }),
  };
}
