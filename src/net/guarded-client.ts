import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { isIP, type LookupFunction } from 'node:net';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Agent, request as undiciRequest, type Dispatcher } from 'undici';
import { AppError } from '../errors.js';
import { hostPortOf, isPublicAddress, parseAllowHosts } from './address-policy.js';
import { FetchError } from './fetch-error.js';

export interface GuardedClientOptions {
  /** "host:port" entries (FETCH_ALLOW_HOSTS) that may be reached although private or loopback. */
  allowHosts?: readonly string[];
  timeoutMs?: number;
  maxBytes?: number;
  maxRedirects?: number;
  userAgent?: string;
  /** Name resolution (tests replace it to play a rebinding DNS server). */
  resolve?: (hostname: string) => Promise<LookupAddress[]>;
}

export interface RequestOptions {
  method?: 'GET' | 'HEAD';
  headers?: Record<string, string>;
  timeoutMs?: number;
  maxBytes?: number;
  maxRedirects?: number;
  signal?: AbortSignal;
  /** Treat non-2xx as FetchError('http_status') (default true). */
  throwOnHttpError?: boolean;
  /** Decides from the final URL and headers whether the body is wanted; when not, it is dropped unread (e.g. a video). */
  wantBody?: (finalUrl: string, headers: Record<string, string>) => boolean;
}

export interface GuardedResponse {
  url: string;
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface DownloadResult {
  url: string;
  status: number;
  headers: Record<string, string>;
  bytes: number;
}

/** Marks a connect-time refusal so it can be told apart from an ordinary network error. */
class BlockedAddressError extends Error {
  readonly blocked = true;
}

const notAllowed = (why: string) => new AppError('URL_NOT_ALLOWED', `The URL is not allowed: ${why}.`);

/**
 * The one way to fetch a URL a caller gave us. The address is judged when the socket connects (a
 * custom DNS lookup), so a name cannot resolve to a public address at check time and a private one
 * at connect time; IP literals are judged before dispatch because Node skips the lookup for them.
 * Redirects are followed by hand so every hop is judged again.
 */
export class GuardedHttpClient {
  private readonly allowHosts: Set<string>;
  private readonly agent: Agent;
  private readonly defaults: Required<Omit<GuardedClientOptions, 'allowHosts' | 'resolve'>>;
  private readonly resolve: (hostname: string) => Promise<LookupAddress[]>;

  constructor(options: GuardedClientOptions = {}) {
    this.allowHosts = parseAllowHosts(options.allowHosts ?? []);
    this.defaults = {
      timeoutMs: options.timeoutMs ?? 15_000,
      maxBytes: options.maxBytes ?? 10 * 1024 * 1024,
      maxRedirects: options.maxRedirects ?? 5,
      userAgent: options.userAgent ?? 'mediagate/0.1 (+https://github.com/mediagate)',
    };
    const resolve = (this.resolve = options.resolve ?? systemResolve);
    const allowHosts = this.allowHosts;
    const guardedLookup = ((hostname: string, opts: { all?: boolean; port?: number }, callback: (...args: unknown[]) => void) => {
      resolve(hostname).then((addresses) => {
        if (!addresses.length) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
        // The allow list names host:port; the port is not known here, so allowed names pass and the
        // port is checked before dispatch (checkUrl).
        const allowedName = [...allowHosts].some((hp) => hp.slice(0, hp.lastIndexOf(':')) === hostname.toLowerCase());
        if (!allowedName && addresses.some((a) => !isPublicAddress(a.address))) {
          return callback(new BlockedAddressError(`${hostname} resolves to a non-public address`));
        }
        if (opts.all) return callback(null, addresses);
        return callback(null, addresses[0].address, addresses[0].family);
      }, (err: unknown) => callback(err));
    }) as unknown as LookupFunction;
    this.agent = new Agent({ connect: { lookup: guardedLookup }, connections: 64 });
  }

  /** Refuses anything but a public http(s) URL (or an allow-listed host:port); returns it parsed. */
  async checkUrl(raw: string): Promise<URL> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw notAllowed('not an absolute URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw notAllowed('only http and https are fetched');
    if (url.username || url.password) throw notAllowed('credentials in URLs are not accepted');
    if (this.allowHosts.has(hostPortOf(url))) return url;
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) {
      if (!isPublicAddress(host)) throw notAllowed('it points at a private, loopback or reserved address');
      return url;
    }
    if (!host || host === 'localhost' || host.endsWith('.localhost')) throw notAllowed('it points at this machine');
    const addresses = await this.resolve(host).catch(() => [] as LookupAddress[]);
    // An unresolvable name is left to fail as a network error; a name that resolves anywhere private is refused.
    if (addresses.some((a) => !isPublicAddress(a.address))) throw notAllowed(`${host} resolves to a non-public address`);
    return url;
  }

  async request(url: string, options: RequestOptions = {}): Promise<GuardedResponse> {
    const maxBytes = options.maxBytes ?? this.defaults.maxBytes;
    return this.withDeadline(options, async (signal) => {
      const { res, finalUrl } = await this.follow(url, options, signal);
      const headers = flatHeaders(res.headers);
      if (options.wantBody && !options.wantBody(finalUrl, headers)) {
        discard(res);
        return { url: finalUrl, status: res.statusCode, headers, body: Buffer.alloc(0) };
      }
      const chunks: Buffer[] = [];
      let total = 0;
      for await (const chunk of res.body) {
        total += chunk.length;
        if (total > maxBytes) {
          discard(res);
          throw new FetchError('too_large', `The response is larger than ${maxBytes} bytes.`);
        }
        chunks.push(chunk as Buffer);
      }
      return { url: finalUrl, status: res.statusCode, headers, body: Buffer.concat(chunks) };
    });
  }

  async download(url: string, destPath: string, options: RequestOptions = {}): Promise<DownloadResult> {
    const maxBytes = options.maxBytes ?? this.defaults.maxBytes;
    try {
      return await this.withDeadline(options, async (signal) => {
        const { res, finalUrl } = await this.follow(url, { ...options, method: 'GET' }, signal);
        let total = 0;
        const cap = new Transform({
          transform(chunk: Buffer, _enc, done) {
            total += chunk.length;
            if (total > maxBytes) return done(new FetchError('too_large', `The media is larger than ${maxBytes} bytes.`));
            done(null, chunk);
          },
        });
        await pipeline(res.body, cap, createWriteStream(destPath), { signal });
        return { url: finalUrl, status: res.statusCode, headers: flatHeaders(res.headers), bytes: total };
      });
    } catch (err) {
      await rm(destPath, { force: true });
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  /** Runs one call under its deadline; the caller's own abort passes through untouched. */
  private async withDeadline<T>(options: RequestOptions, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const timeoutMs = options.timeoutMs ?? this.defaults.timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    try {
      return await fn(signal);
    } catch (err) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (timeout.aborted) throw new FetchError('timeout', `No complete answer within ${timeoutMs} ms.`, undefined, { cause: err });
      throw translate(err);
    }
  }

  /** Sends the request and follows redirects by hand, judging every hop before connecting. */
  private async follow(start: string, options: RequestOptions, signal: AbortSignal): Promise<{ res: Dispatcher.ResponseData; finalUrl: string }> {
    const maxRedirects = options.maxRedirects ?? this.defaults.maxRedirects;
    const maxBytes = options.maxBytes ?? this.defaults.maxBytes;
    let method = options.method ?? 'GET';
    let current = start;
    for (let hop = 0; ; hop++) {
      const url = await this.checkUrl(current);
      const res = await undiciRequest(url, {
        method,
        dispatcher: this.agent,
        signal,
        headers: { 'user-agent': this.defaults.userAgent, ...options.headers },
      });
      const location = res.headers.location;
      if (res.statusCode >= 300 && res.statusCode < 400 && location) {
        discard(res);
        if (hop >= maxRedirects) throw new FetchError('too_many_redirects', `More than ${maxRedirects} redirects.`);
        current = new URL(String(location), url).toString();
        if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method !== 'HEAD')) method = 'GET';
        continue;
      }
      if ((options.throwOnHttpError ?? true) && (res.statusCode < 200 || res.statusCode >= 300)) {
        discard(res);
        throw new FetchError('http_status', `The server answered ${res.statusCode}.`, res.statusCode);
      }
      const length = Number(res.headers['content-length']);
      const wanted = !options.wantBody || options.wantBody(url.toString(), flatHeaders(res.headers));
      if (method !== 'HEAD' && wanted && Number.isFinite(length) && length > maxBytes) {
        discard(res);
        throw new FetchError('too_large', `The response is ${length} bytes; the limit is ${maxBytes}.`);
      }
      return { res, finalUrl: url.toString() };
    }
  }
}

function systemResolve(hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => dnsLookup(hostname, { all: true }, (err, addrs) => (err ? reject(err) : resolve(addrs))));
}

/** Drops a body we will not read; its socket is closed rather than drained when the body is large. */
function discard(res: Dispatcher.ResponseData): void {
  res.body.on('error', () => {});
  res.body.destroy();
}

function translate(err: unknown): unknown {
  if (err instanceof AppError || err instanceof FetchError) return err;
  for (let e: any = err; e; e = e.cause) {
    if (e instanceof BlockedAddressError || e?.blocked) return notAllowed('it resolves to a private, loopback or reserved address');
    if (e instanceof FetchError) return e;
  }
  return new FetchError('network', (err as Error)?.message ?? 'network error', undefined, { cause: err });
}

function flatHeaders(headers: Dispatcher.ResponseData['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v);
  return out;
}
