import type { FastifyError } from 'fastify';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { databaseUnavailable } from '../db/outage.js';
import { AppError, isAppError } from '../errors.js';

/** The one REST error body: `{ error: { code, message, details?, requestId } }` (the contract's). */
export type { ErrorBody } from '../types/contract/common.js';
import type { ErrorBody } from '../types/contract/common.js';

/** Fastify's own refusals, in the contract's words. */
function fromFastify(err: FastifyError): AppError | null {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('UNSUPPORTED_MEDIA_TYPE');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('INVALID_INPUT', 'The request body is larger than 16 KiB.', { body: 'larger than 16 KiB' });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('INVALID_INPUT', 'The request body is empty; send a JSON object.', { body: 'empty' });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('INVALID_INPUT', 'The request body is not valid JSON.', { body: 'not valid JSON' });
    case 'FST_ERR_BAD_URL':
      return new AppError('INVALID_INPUT', 'The request path is not validly encoded.', { path: 'invalid percent-encoding' });
    // No id is that long: for the caller it is simply not there.
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new AppError('NOT_FOUND', 'Not found.');
    default:
      break;
  }
  if (err instanceof SyntaxError || (err.statusCode === 400 && /JSON/i.test(err.message))) {
    return new AppError('INVALID_INPUT', 'The request body is not valid JSON.', { body: 'not valid JSON' });
  }
  if (err.statusCode === 404) return new AppError('NOT_FOUND', 'No such route.');
  if (err.statusCode === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE');
  if (err.statusCode === 429) return new AppError('RATE_LIMITED');
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) return new AppError('INVALID_INPUT', 'The request is not valid.');
  return null;
}

/** Maps any error to a status and the error body; null app error means "log it, it is a bug". */
export function toErrorResponse(err: unknown, requestId: string): { status: number; body: ErrorBody; known: boolean } {
  const appError = isAppError(err) ? err : fromFastify(err as FastifyError);
  // A lost database connection is logged like a bug, but the caller may simply retry.
  const e = appError ?? databaseUnavailable(err) ?? new AppError('INTERNAL_ERROR');
  return {
    status: e.status,
    known: appError !== null,
    body: { error: { code: e.code, message: e.message, ...(e.details ? { details: e.details } : {}), requestId } },
  };
}

/**
 * The answer to a request Node's HTTP parser could not read (headers or URL too large, malformed
 * HTTP): there is no request object yet, so the one error body is written to the socket directly.
 */
export function writeClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const requestId = randomUUID();
  const message =
    err.code === 'HPE_HEADER_OVERFLOW' ? 'The request headers or URL are too large.' : 'The request could not be read as HTTP.';
  const { status, body } = toErrorResponse(new AppError('INVALID_INPUT', message), requestId);
  const text = JSON.stringify(body);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy(err);
}

/**
 * An error answered on a socket that has no Fastify reply (a refused WebSocket upgrade): the one
 * error body with its status and headers, then the connection is closed.
 */
export function writeSocketError(socket: Duplex, err: AppError, headers: Record<string, string> = {}): void {
  const requestId = randomUUID();
  const { status, body } = toErrorResponse(err, requestId);
  const text = JSON.stringify(body);
  if (!socket.writable) return void socket.destroy();
  const lines = Object.entries({
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'x-request-id': requestId,
    connection: 'close',
  });
  socket.once('finish', () => socket.destroy());
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n${text}`);
}
