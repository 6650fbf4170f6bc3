import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { isIP, isIPv6, type LookupFunction } from 'node:net';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Agent, buildConnector, request as undiciRequest, type Dispatcher } from 'undici';
import { AppError } from '../errors.js';
import { hostPortOf, parseAllowHosts } from '../addresses.js';
import { isPublicAddress } from './address-policy.js';
import { FetchError } from './fetch-error.js';

export interface GuardedClientOptions {
  /** "host:port" entries (FETCH_ALLOW_HOSTS) that may be reached although private or loopback. */
  allowHosts?: readonly string[];
  /** Defaults used when a call does not say. */
  timeoutMs?: number; // default 15000, whole request incl. body
  maxBytes?: number; // default 10 MiB
  maxRedirects?: number; // default 5
  userAgent?: string; // default 'mediagate/0.1 (+https://github.com/mediagate)'
  /** Name resolution for both the pre-check and the connect; tests replace it (default dns.lookup all). */
  resolve?: (hostname: string) => Promise<LookupAddress[]>;
}

export interface RequestOptions {
  /** POST is for delivering to a caller's URL (webhooks): its redirects are not followed, a 3xx is the answer. */
  method?: 'GET' | 'HEAD' | 'POST';
  body?: string | Buffer;
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

/** A buffered response; url is the final URL after redirects, header names lower-case with values joined. */
export interface GuardedResponse {
  url: string;
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** An open response whose body is still to be read. */
export interface GuardedStream {
  url: string;
  status: number;
  headers: Record<string, string>;
  body: Readable;
}

/** What download() wrote. */
export interface DownloadResult {
  url: string;
  status: number;
  headers: Record<string, string>;
  bytes: number;
}

/** Marks a connect-time refusal so it can be told apart from an ordinary network error. */
class BlockedAddressError extends Error {}

const notAllowed = (why: string) => new AppError('URL_NOT_ALLOWED', `The URL is not allowed: ${why}.`);
const SENSITIVE_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

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
    this.resolve = options.resolve ?? systemResolve;
    // The lookup only sees a hostname, so the host:port exemption is decided per connection by
    // picking the connector; an allow-listed name on one port must not open every port.
    const strict = buildConnector({ lookup: this.lookup(true) });
    const exempt = buildConnector({ lookup: this.lookup(false) });
    const connect: buildConnector.connector = (opts, callback) => {
      const host = isIPv6(opts.hostname) ? `[${opts.hostname}]` : opts.hostname.toLowerCase();
      const port = opts.port || (opts.protocol === 'https:' ? '443' : '80');
      if (this.allowHosts.has(`${host}:${port}`)) return exempt(opts, callback);
      // Defence in depth: checkUrl already judged literals, and Node would not ask the lookup.
      if (isIP(opts.hostname) && !isPublicAddress(opts.hostname)) {
        return callback(new BlockedAddressError(`${opts.hostname} is not a public address`), null);
      }
      return strict(opts, callback);
    };
    this.agent = new Agent({ connect, connections: 64 });
  }

  /** Throws AppError('URL_NOT_ALLOWED') unless the URL is http(s), has no credentials, and its host (literal or every DNS answer) is a public address or allow-listed host:port. Returns the parsed URL. */
  async checkUrl(raw: string): Promise<URL> {
    const url = URL.parse(raw);
    if (!url) throw notAllowed('it is not an absolute URL');
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw notAllowed('only http and https URLs are fetched');
    if (url.username || url.password) throw notAllowed('URLs with credentials are not accepted');
    if (this.allowHosts.has(hostPortOf(url))) return url;
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) {
      if (!isPublicAddress(host)) throw notAllowed('it points at a private, loopback or reserved address');
      return url;
    }
    // An unresolvable name fails later as a network error; nothing can connect to it meanwhile,
    // and the connect-time lookup judges whatever it resolves to by then.
    const addresses = await this.resolve(host).catch(() => [] as LookupAddress[]);
    if (addresses.some((a) => !isPublicAddress(a.address))) throw notAllowed(`${host} resolves to a non-public address`);
    return url;
  }

  /** Buffered request; body capped at maxBytes (FetchError 'too_large' as soon as it is passed, also when content-length says so up front). */
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
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        total += chunk.length;
        if (total > maxBytes) {
          discard(res);
          throw new FetchError('too_large', `The response is larger than ${maxBytes} bytes.`);
        }
        chunks.push(chunk);
      }
      // One chunk (most small answers) is the body as it is: no copy.
      return { url: finalUrl, status: res.statusCode, headers, body: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, total) };
    });
  }

  /**
   * Opens a response and hands its body over unread, for relaying (the caller must read or destroy
   * it). The address rules and the deadline apply as to every call; the byte cap is the caller's.
   */
  async open(url: string, options: RequestOptions = {}): Promise<GuardedStream> {
    return this.withDeadline(
      options,
      async (signal) => {
        const { res, finalUrl } = await this.follow(url, { ...options, maxBytes: Infinity, wantBody: undefined }, signal);
        return { url: finalUrl, status: res.statusCode, headers: flatHeaders(res.headers), body: res.body };
      },
      (opened) => opened.body,
    );
  }

  /** Streams the body to destPath (created/truncated), same rules and cap; deletes the partial file on failure. */
  async download(
    url: string,
    destPath: string,
    options: RequestOptions & {
      /**
       * Told the body's announced length (null: none) once the headers are in, before any byte is
       * written; answers the most bytes the body may have (e.g. what it reserved on a disk budget),
       * or throws to refuse the download.
       */
      admit?: (contentLength: number | null) => Promise<number>;
    } = {},
  ): Promise<DownloadResult> {
    let maxBytes = options.maxBytes ?? this.defaults.maxBytes;
    let opened = false;
    try {
      return await this.withDeadline(options, async (signal) => {
        const { res, finalUrl } = await this.follow(url, { ...options, method: 'GET', wantBody: undefined }, signal);
        if (options.admit) {
          const announced = Number(firstHeader(res.headers['content-length']));
          try {
            maxBytes = Math.min(maxBytes, await options.admit(Number.isSafeInteger(announced) && announced >= 0 ? announced : null));
          } catch (err) {
            discard(res);
            throw err;
          }
        }
        let total = 0;
        const cap = new Transform({
          transform(chunk: Buffer, _enc, done) {
            total += chunk.length;
            if (total > maxBytes) return done(new FetchError('too_large', `The media is larger than ${maxBytes} bytes.`));
            done(null, chunk);
          },
        });
        opened = true;
        await pipeline(res.body, cap, createWriteStream(destPath), { signal });
        return { url: finalUrl, status: res.statusCode, headers: flatHeaders(res.headers), bytes: total };
      });
    } catch (err) {
      // Only a file this call created or truncated is removed; a refused URL leaves the path alone.
      if (opened) await rm(destPath, { force: true });
      throw err;
    }
  }

  /** Closes the agent and its pooled connections. */
  async close(): Promise<void> {
    await this.agent.close();
  }

  /** A dns.lookup stand-in for net.connect; when strict, it fails if any answer is not public. */
  private lookup(strict: boolean): LookupFunction {
    const lookup = (hostname: string, opts: { all?: boolean }, callback: (...args: unknown[]) => void) => {
      this.resolve(hostname).then(
        (addresses) => {
          if (!addresses.length) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
          if (strict && addresses.some((a) => !isPublicAddress(a.address))) {
            return callback(new BlockedAddressError(`${hostname} resolves to a non-public address`));
          }
          if (opts.all) return callback(null, addresses);
          return callback(null, addresses[0].address, addresses[0].family);
        },
        (err: unknown) => callback(err),
      );
    };
    return lookup as unknown as LookupFunction;
  }

  /**
   * Runs one call under its deadline; the caller's own abort passes through untouched. With
   * `bodyOf`, the deadline also covers reading the body the call hands over, until it closes.
   */
  private async withDeadline<T>(
    options: RequestOptions,
    fn: (signal: AbortSignal) => Promise<T>,
    bodyOf?: (result: T) => Readable,
  ): Promise<T> {
    const timeoutMs = options.timeoutMs ?? this.defaults.timeoutMs;
    // A timer cleared when the call is over: AbortSignal.timeout would stay armed for the whole
    // timeout after it, holding the call's signals (a page fetch per parse, for 15 s each). The
    // caller's abort is forwarded to the same controller rather than joined with AbortSignal.any:
    // a composite signal registers weak references and finalizers that only a full collection
    // frees, which at a thousand parses a second kept the old generation growing.
    const caller = options.signal;
    caller?.throwIfAborted();
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException(`No complete answer within ${timeoutMs} ms.`, 'TimeoutError')),
      timeoutMs,
    ).unref();
    const signal = deadline.signal;
    const forward = () => deadline.abort(caller!.reason);
    caller?.addEventListener('abort', forward, { once: true });
    let body: Readable | null = null;
    try {
      const result = await fn(signal);
      body = bodyOf?.(result) ?? null;
      return result;
    } catch (err) {
      if (caller?.aborted) throw caller.reason;
      if (err instanceof AppError || err instanceof FetchError) throw err;
      if (signal.aborted) throw new FetchError('timeout', `No complete answer within ${timeoutMs} ms.`, undefined, { cause: err });
      throw translate(err);
    } finally {
      const done = () => {
        clearTimeout(timer);
        caller?.removeEventListener('abort', forward);
      };
      if (body && !body.destroyed) body.once('close', done);
      else done();
    }
  }

  /** Sends the request and follows redirects by hand, judging every hop before connecting. */
  private async follow(
    start: string,
    options: RequestOptions,
    signal: AbortSignal,
  ): Promise<{ res: Dispatcher.ResponseData; finalUrl: string }> {
    const maxRedirects = options.maxRedirects ?? this.defaults.maxRedirects;
    const maxBytes = options.maxBytes ?? this.defaults.maxBytes;
    const method = options.method ?? 'GET';
    let headers: Record<string, string> = { 'user-agent': this.defaults.userAgent };
    for (const [k, v] of Object.entries(options.headers ?? {})) headers[k.toLowerCase()] = v;
    let current = start;
    for (let hop = 0; ; hop++) {
      const url = await untilAborted(this.checkUrl(current), signal); // dns.lookup itself cannot be aborted
      // undici 7's request() follows no redirects unless a redirect interceptor is composed in.
      const res = await undiciRequest(url, {
        method,
        dispatcher: this.agent,
        signal,
        headers,
        body: method === 'POST' ? options.body : undefined,
      });
      const location = firstHeader(res.headers.location);
      if (res.statusCode >= 300 && res.statusCode < 400 && location && method !== 'POST') {
        discard(res);
        if (hop >= maxRedirects) throw new FetchError('too_many_redirects', `More than ${maxRedirects} redirects.`);
        const next = URL.parse(location, url.href);
        if (!next) throw new FetchError('network', 'The server redirected to an invalid URL.');
        // Credentials the caller meant for one origin must not follow a redirect to another.
        if (next.origin !== url.origin) headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !SENSITIVE_HEADERS.has(k)));
        // Only GET and HEAD get here, and both keep their method on every redirect status (as fetch does).
        current = next.toString();
        continue;
      }
      if ((options.throwOnHttpError ?? true) && (res.statusCode < 200 || res.statusCode >= 300)) {
        discard(res);
        throw new FetchError('http_status', `The server answered ${res.statusCode}.`, res.statusCode);
      }
      const finalUrl = url.toString();
      const length = Number(firstHeader(res.headers['content-length']));
      const wanted = !options.wantBody || options.wantBody(finalUrl, flatHeaders(res.headers));
      if (method !== 'HEAD' && wanted && Number.isFinite(length) && length > maxBytes) {
        discard(res);
        throw new FetchError('too_large', `The response is ${length} bytes; the limit is ${maxBytes}.`);
      }
      return { res, finalUrl };
    }
  }
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function systemResolve(hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => dnsLookup(hostname, { all: true }, (err, addrs) => (err ? reject(err) : resolve(addrs))));
}

/** Drops a body we will not read; destroying closes the socket rather than draining a large body. */
function discard(res: Dispatcher.ResponseData): void {
  res.body.on('error', () => {});
  res.body.destroy();
}

/** undici wraps connect failures; a refusal from our lookup may sit several causes deep. */
function translate(err: unknown): unknown {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof BlockedAddressError) return notAllowed('it resolves to a private, loopback or reserved address');
    if (e instanceof AppError || e instanceof FetchError) return e;
  }
  const message = err instanceof Error ? err.message : 'network error';
  return new FetchError('network', `The request failed: ${message}`, undefined, { cause: err });
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function flatHeaders(headers: Dispatcher.ResponseData['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v);
  return out;
}
