import { errorResponses } from './openapi-errors.js';
import { ALWAYS, REQUEST_ID, json, ref, text } from './openapi-parts.js';
import { nullable } from './openapi-schemas.js';

// The paths outside /api: the account area's sign-in and the operators' probes.

/** The cookie's name wherever the account area is served over https or from this machine (see session.cookie.ts). */
const SESSION_COOKIE_NAME = '__Host-mg_session';
const SESSION_SET = {
  ...REQUEST_ID,
  'Set-Cookie': {
    schema: text,
    description: `${SESSION_COOKIE_NAME}=<id>; Max-Age=SESSION_HOURS; Path=/; HttpOnly; Secure; SameSite=Strict (mg_session without Secure only outside production with a plain-http PUBLIC_URL on another host)`,
  },
};
const LINK_TOKEN = {
  type: 'object',
  required: ['token'],
  properties: { token: { type: 'string', description: 'from the link: /account/#login=<token>' } },
};
const LINK_INVALID_INPUT = { message: 'Send { "token": "<the login link token>" }.', details: { token: 'required string' } };
const LINK_REFUSED = 'This login link is not valid: it is unknown, already used or expired. Ask for a new one.';
const CSRF_REFUSED = { message: 'Missing or wrong CSRF token.' };

/** The account area's sign-in with a login link (`mediagate account login-link`) and its session cookie. */
export const ACCOUNT_PATHS = {
  '/account/config.json': {
    get: {
      operationId: 'accountConfig',
      tags: ['account area'],
      summary: 'Which sign-ins the account page offers',
      security: [],
      parameters: [ref('parameters', 'RequestId')],
      responses: {
        '200': {
          description: 'oidc is null unless OIDC_ISSUER and OIDC_CLIENT_ID are set',
          headers: REQUEST_ID,
          content: json({
            type: 'object',
            required: ['oidc', 'loginLinks'],
            properties: {
              oidc: nullable({ type: 'object', required: ['issuer', 'clientId'], properties: { issuer: text, clientId: text } }),
              loginLinks: { type: 'boolean' },
            },
          }),
        },
        ...errorResponses(ALWAYS),
      },
    },
  },
  '/account/api/login-link': {
    post: {
      operationId: 'peekLoginLink',
      tags: ['account area'],
      summary:
        "Which account a login link's token would sign in, without spending it, and the browser's current session (the page asks before switching accounts)",
      security: [],
      parameters: [ref('parameters', 'RequestId')],
      requestBody: { required: true, content: json(LINK_TOKEN) },
      responses: {
        '200': {
          description: 'The link’s account; session is the live session of the cookie sent, else null',
          headers: REQUEST_ID,
          content: json({
            type: 'object',
            required: ['account', 'expiresAt', 'session'],
            properties: {
              account: { type: 'object', required: ['id', 'name'], properties: { id: { type: 'string', format: 'uuid' }, name: text } },
              expiresAt: { type: 'string', format: 'date-time' },
              session: nullable(ref('schemas', 'Session')),
            },
          }),
        },
        ...errorResponses(['INVALID_INPUT', 'UNAUTHENTICATED', 'UNSUPPORTED_MEDIA_TYPE', ...ALWAYS], {
          INVALID_INPUT: LINK_INVALID_INPUT,
          UNAUTHENTICATED: { message: LINK_REFUSED },
        }),
      },
    },
  },
  '/account/api/session': {
    post: {
      operationId: 'startSession',
      tags: ['account area'],
      summary: `Spend a login link's token for a session: sets the HttpOnly cookie ${SESSION_COOKIE_NAME}, and ends the browser's live session (which needs its x-csrf-token)`,
      security: [],
      parameters: [ref('parameters', 'CsrfToken'), ref('parameters', 'RequestId')],
      requestBody: { required: true, content: json(LINK_TOKEN) },
      responses: {
        '200': { description: 'The session', headers: SESSION_SET, content: json(ref('schemas', 'Session')) },
        ...errorResponses(['INVALID_INPUT', 'UNAUTHENTICATED', 'FORBIDDEN', 'UNSUPPORTED_MEDIA_TYPE', ...ALWAYS], {
          INVALID_INPUT: LINK_INVALID_INPUT,
          UNAUTHENTICATED: { message: LINK_REFUSED },
          FORBIDDEN: CSRF_REFUSED,
        }),
      },
    },
    get: {
      operationId: 'currentSession',
      tags: ['account area'],
      summary: 'The current session (the page recovers its CSRF token after a reload), or 204 when there is none',
      security: [{ sessionCookie: [] }, {}],
      parameters: [ref('parameters', 'RequestId')],
      responses: {
        '200': { description: 'The session', headers: REQUEST_ID, content: json(ref('schemas', 'Session')) },
        '204': {
          description: 'Not signed in: no cookie, or its session ended or expired (the cookie is then cleared)',
          headers: {
            ...REQUEST_ID,
            'Set-Cookie': {
              schema: text,
              description: 'mg_session=; Expires=Thu, 01 Jan 1970 00:00:00 GMT (only when a dead session’s cookie came)',
            },
          },
        },
        ...errorResponses(ALWAYS),
      },
    },
  },
  '/account/api/session/oidc': {
    post: {
      operationId: 'startSessionWithIdToken',
      tags: ['account area'],
      summary: `Exchange an OpenID Connect ID token, once, for a session: sets the HttpOnly cookie ${SESSION_COOKIE_NAME}, and ends the browser's live session (which needs its x-csrf-token)`,
      description:
        'The sign-in must have been made with nonce = base64url(SHA-256(nonceVerifier)); the verifier stays with the page that made it, so an ID token seen elsewhere opens no session. Needs OIDC_ISSUER.',
      security: [],
      parameters: [ref('parameters', 'CsrfToken'), ref('parameters', 'RequestId')],
      requestBody: {
        required: true,
        content: json({
          type: 'object',
          required: ['idToken', 'nonceVerifier'],
          properties: {
            idToken: { type: 'string', description: 'the ID token from the provider, for OIDC_AUDIENCE' },
            nonceVerifier: {
              type: 'string',
              pattern: '^[A-Za-z0-9_-]{43,128}$',
              description: 'the secret whose SHA-256, base64url, is the token’s nonce',
            },
          },
        }),
      },
      responses: {
        '200': { description: 'The session', headers: SESSION_SET, content: json(ref('schemas', 'Session')) },
        ...errorResponses(['INVALID_INPUT', 'UNAUTHENTICATED', 'FORBIDDEN', 'UNSUPPORTED_MEDIA_TYPE', ...ALWAYS], {
          INVALID_INPUT: {
            message: 'Send { "idToken": "<the ID token>", "nonceVerifier": "<the secret whose SHA-256 is its nonce>" }.',
            details: { nonceVerifier: 'required string' },
          },
          UNAUTHENTICATED: {
            message: 'This sign-in is not valid: the ID token is invalid, expired, for another sign-in or already used. Sign in again.',
          },
          FORBIDDEN: CSRF_REFUSED,
        }),
      },
    },
  },
  '/account/api/logout': {
    post: {
      operationId: 'endSession',
      tags: ['account area'],
      summary: 'End the session on the server and clear the cookie (204 also when there was none)',
      security: [{ sessionCookie: [] }],
      parameters: [ref('parameters', 'CsrfToken'), ref('parameters', 'RequestId')],
      responses: {
        '204': { description: 'Signed out', headers: REQUEST_ID },
        ...errorResponses(['FORBIDDEN', 'UNSUPPORTED_MEDIA_TYPE', ...ALWAYS], { FORBIDDEN: CSRF_REFUSED }),
      },
    },
  },
};

/** Liveness, readiness and metrics: no API key, no rate limit. */
export const OPERATOR_PATHS = {
  '/healthz': {
    get: {
      operationId: 'health',
      tags: ['operators'],
      summary: 'Liveness: the process answers',
      security: [],
      responses: {
        '200': {
          description: 'Alive',
          headers: REQUEST_ID,
          content: json(
            { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } },
            { example: { status: 'ok' } },
          ),
        },
      },
    },
  },
  '/readyz': {
    get: {
      operationId: 'ready',
      tags: ['operators'],
      summary: 'Readiness: the database answers; route traffic here only on 200',
      security: [],
      responses: {
        '200': { description: 'Ready', headers: REQUEST_ID, content: json(ref('schemas', 'Readiness'), { example: { status: 'ready' } }) },
        '503': {
          description: 'Not ready: reason says what is missing',
          headers: REQUEST_ID,
          content: json(ref('schemas', 'Readiness'), { example: { status: 'unavailable', reason: 'database' } }),
        },
      },
    },
  },
  '/metrics': {
    get: {
      operationId: 'metrics',
      tags: ['operators'],
      summary: 'Prometheus metrics (requests, tasks, credits, process)',
      description:
        'Here unless METRICS_PORT serves the metrics on a port of their own (then 404 here). Open unless METRICS_TOKEN is set; then `Authorization: Bearer <METRICS_TOKEN>` is required. In production one of the two must be set.',
      security: [{}, { metricsToken: [] }],
      responses: {
        '200': {
          description: 'The Prometheus text exposition format',
          headers: REQUEST_ID,
          content: { 'text/plain': { schema: text, example: 'mediagate_tasks_total{operation="PARSE",outcome="SUCCEEDED"} 1\n' } },
        },
        ...errorResponses(['UNAUTHENTICATED', 'INTERNAL_ERROR'], { UNAUTHENTICATED: { message: 'A valid metrics token is required.' } }),
      },
    },
  },
};
