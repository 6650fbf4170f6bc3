import type { FastifyError } from 'fastify';
import { AppError, isAppError } from '../errors.js';

/** The one REST error body: `{ error: { code, message, details?, requestId } }`. */
export interface ErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown>; requestId: string };
}

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
  const e = appError ?? new AppError('INTERNAL_ERROR');
  return {
    status: e.status,
    known: appError !== null,
    body: { error: { code: e.code, message: e.message, ...(e.details ? { details: e.details } : {}), requestId } },
  };
}
