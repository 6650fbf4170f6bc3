import { createReadStream } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { announce } from './bench-http.js';

/**
 * The bench's web page, in a process of its own: a page that states what a parse needs (type with
 * codecs, height, length), so nothing is probed. With BENCH_LONG_MEDIA_FILE it also serves that file
 * as /long.mp3 for the long-media row.
 */
const PAGE = `<html><head><title>Bench clip</title>
    <meta property="og:video" content="https://cdn.example/clip-720.mp4"><meta property="og:video:type" content='video/mp4; codecs="avc1.64001f, mp4a.40.2"'>
    <meta property="og:video:height" content="720"><meta property="video:duration" content="95"><meta property="og:image" content="https://cdn.example/c.jpg"></head></html>`;
const longMedia = process.env.BENCH_LONG_MEDIA_FILE;

const server = createServer((req, res) => {
  if (req.url === '/long.mp3' && longMedia) return void createReadStream(longMedia).pipe(res.writeHead(200, { 'content-type': 'audio/mpeg' }));
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(req.method === 'HEAD' ? undefined : PAGE);
});
server.listen(0, '127.0.0.1', () => announce((server.address() as AddressInfo).port));
