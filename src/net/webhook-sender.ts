import { Webhook } from 'standardwebhooks';
import { AppError } from '../errors.js';
import { FetchError, failureReason } from './fetch-error.js';
import type { GuardedHttpClient } from './guarded-client.js';

/** One Standard Webhooks message, as it goes on the wire. */
export interface SignedWebhook {
  url: string;
  /** The message id: the same on every retry. */
  eventId: string;
  timestamp: Date;
  /** The JSON body, already serialized (the signature covers these exact bytes). */
  payload: string;
  /** The account's signing secret (`whsec_…`). */
  secret: string;
  timeoutMs: number;
}

/** What the receiver did with one attempt: its status, or in our own words why it failed. */
export interface WebhookOutcome {
  statusCode: number | null;
  error: string | null;
}

/**
 * Sends one signed webhook (Standard Webhooks: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature`) through the guarded client, reading at most 64 KiB of the answer. Never
 * throws: the receiver's own text never reaches the caller, only a status or our words.
 */
export async function sendSignedWebhook(client: GuardedHttpClient, m: SignedWebhook): Promise<WebhookOutcome> {
  const headers = {
    'content-type': 'application/json',
    'webhook-id': m.eventId,
    'webhook-timestamp': String(Math.floor(m.timestamp.getTime() / 1000)),
    'webhook-signature': new Webhook(m.secret).sign(m.eventId, m.timestamp, m.payload),
  };
  try {
    const res = await client.request(m.url, {
      method: 'POST',
      body: m.payload,
      headers,
      timeoutMs: m.timeoutMs,
      maxBytes: 64 * 1024,
      throwOnHttpError: false,
    });
    return { statusCode: res.status, error: res.status < 200 || res.status >= 300 ? `The receiver answered ${res.status}.` : null };
  } catch (err) {
    return {
      statusCode: null,
      error:
        err instanceof AppError
          ? err.message
          : err instanceof FetchError && err.kind === 'timeout'
            ? 'The receiver did not answer in time.'
            : `The receiver could not be reached${err instanceof FetchError ? `: ${failureReason(err)}` : ''}.`,
    };
  }
}
