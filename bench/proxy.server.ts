import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { announce, PAGE_CONNECTIONS, PAGE_REQUEST_HEADERS, readBody, sendJson } from './bench-http.js';

/**
 * Reference (a), the floor of the pipeline's cost: a bare Node `http` server that makes the same
 * page fetch as the gateway's parse (undici `request` through an Agent, as the guarded client
 * does) and answers a small JSON. No auth, no database, no extraction.
 */
const agent = new Agent({ connections: PAGE_CONNECTIONS });

const server = createServer(async (req, res) => {
  try {
    const { url } = JSON.parse(await readBody(req)) as { url: string };
    const page = await request(url, { dispatcher: agent, headers: PAGE_REQUEST_HEADERS });
    const html = await page.body.text();
    sendJson(res, 200, { url, status: page.statusCode, bytes: html.length });
  } catch (err) {
    sendJson(res, 502, { error: String(err) });
  }
});
server.listen(0, '127.0.0.1', () => announce((server.address() as AddressInfo).port));
