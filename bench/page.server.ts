import { createReadStream, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { announce } from './bench-http.js';
import { ORDINARY_MEDIA } from './bench-media.js';

/**
 * The bench's web pages, in a process of its own. `/watch` states what a parse needs (type with
 * codecs, height, length), so nothing is read. `/ordinary/<n>` is a page as many sites write it:
 * `og:video` (or `og:audio`) with a plain type and nothing else, naming `/media/<n>/<file>`, one
 * of BENCH_MEDIA_DIR's files by n, served with Range: every page names media of its own, so each
 * parse must read it. With BENCH_LONG_MEDIA_FILE it also serves that file as /long.mp3.
 */
const PAGE = `<html><head><title>Bench clip</title>
    <meta property="og:video" content="https://cdn.example/clip-720.mp4"><meta property="og:video:type" content='video/mp4; codecs="avc1.64001f, mp4a.40.2"'>
    <meta property="og:video:height" content="720"><meta property="video:duration" content="95"><meta property="og:image" content="https://cdn.example/c.jpg"></head></html>`;
const longMedia = process.env.BENCH_LONG_MEDIA_FILE;
/** With BENCH_STREAM_FILE: `/stream.mp4` (with Range) and `/stream`, a page whose only media it is. */
const streamFile = process.env.BENCH_STREAM_FILE ? readFileSync(process.env.BENCH_STREAM_FILE) : null;
const mediaDir = process.env.BENCH_MEDIA_DIR;
const media = new Map<string, { type: string; bytes: Buffer }>(
  mediaDir ? ORDINARY_MEDIA.map((m) => [m.file, { ...m, bytes: readFileSync(join(mediaDir, m.file)) }]) : [],
);

const ordinaryPage = (origin: string, n: number) => {
  const m = ORDINARY_MEDIA[n % ORDINARY_MEDIA.length];
  return `<html><head><title>Clip ${n}</title>
    <meta property="${m.tag}" content="${origin}/media/${n}/${m.file}"><meta property="${m.tag}:type" content="${m.type}"></head></html>`;
};

const server = createServer((req, res) => {
  if (req.url === '/long.mp3' && longMedia)
    return void createReadStream(longMedia).pipe(res.writeHead(200, { 'content-type': 'audio/mpeg' }));
  if (req.url === '/stream.mp4' && streamFile) return void serveRange(req, res, streamFile, 'video/mp4');
  if (req.url === '/stream' && streamFile)
    return void html(
      res,
      `<html><head><title>Stream clip</title><meta property="og:video" content="http://${req.headers.host}/stream.mp4"><meta property="og:video:type" content="video/mp4"></head></html>`,
      req.method,
    );
  const page = /^\/ordinary\/(\d+)$/.exec(req.url ?? '');
  if (page && media.size) return void html(res, ordinaryPage(`http://${req.headers.host}`, Number(page[1])), req.method);
  const file = /^\/media\/\d+\/([\w.-]+)$/.exec(req.url ?? '');
  const found = file ? media.get(file[1]) : undefined;
  if (found) return void serveRange(req, res, found.bytes, found.type);
  html(res, PAGE, req.method);
});
server.listen(0, '127.0.0.1', () => announce((server.address() as AddressInfo).port));

function html(res: ServerResponse, body: string, method: string | undefined): void {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(method === 'HEAD' ? undefined : body);
}

/** 206 for one `bytes=a-b`, `bytes=a-` or `bytes=-n` range (as a CDN answers), 416 past the end, else 200 with the whole file. */
function serveRange(req: IncomingMessage, res: ServerResponse, body: Buffer, type: string): void {
  const m = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
  if (!m || (m[1] === '' && m[2] === '')) {
    res.writeHead(200, { 'content-type': type, 'content-length': body.length, 'accept-ranges': 'bytes' });
    return void res.end(req.method === 'HEAD' ? undefined : body);
  }
  const start = m[1] === '' ? Math.max(0, body.length - Number(m[2])) : Number(m[1]);
  const end = m[1] === '' || m[2] === '' ? body.length - 1 : Math.min(Number(m[2]), body.length - 1);
  if (start >= body.length || end < start) return void res.writeHead(416, { 'content-range': `bytes */${body.length}` }).end();
  res.writeHead(206, {
    'content-type': type,
    'content-length': end - start + 1,
    'content-range': `bytes ${start}-${end}/${body.length}`,
    'accept-ranges': 'bytes',
  });
  res.end(req.method === 'HEAD' ? undefined : body.subarray(start, end + 1));
}
