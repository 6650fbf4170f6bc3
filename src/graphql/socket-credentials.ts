import { CloseCode } from 'graphql-ws';
import type { WebSocket } from 'ws';
import { AppError, isAppError } from '../errors.js';
import type { Principal } from '../modules/api-keys/api-key.service.js';
import { authenticate, type Credentials } from '../http/authenticate.js';
import type { Services } from '../modules/services.js';

/** WebSocket close reasons are at most 123 bytes. */
const MAX_REASON_BYTES = 123;
/** A socket told to close that does not answer the closing handshake is cut after this long. */
const CLOSE_GRACE_MS = 1000;
/** setTimeout's longest wait; a later expiry is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Who a socket's connection_init proved to be, kept for every operation it sends. */
export interface Caller {
  credentials: Credentials;
  principal: Principal;
  /** A check of the credentials failed for want of the database: authenticate again before the next operation. */
  stale: boolean;
}

interface Tracked extends Caller {
  socket: WebSocket;
  expiry: NodeJS.Timeout | null;
  /** The check under way, and whether another was asked for meanwhile. */
  checking: Promise<void> | null;
  checkAgain: boolean;
}

/**
 * A socket lives no longer than the credential it signed in with. Whatever the database says changed
 * (on any instance, through LISTEN/NOTIFY) closes the sockets concerned with 4401, and with the
 * socket every subscription it runs:
 * - `mediagate_session`: a session ended (logout, a new sign-in in its browser);
 * - `mediagate_auth`: a key, its account's roles or membership changed: the socket authenticates
 *   again at once, and is closed when that fails (a revoked key);
 * - the listener reconnected (a notification may have been missed): every socket authenticates again.
 * A session or an OpenID Connect token that expires closes its sockets at that moment, by a timer.
 */
export class SocketCredentials {
  private readonly callers = new Map<WebSocket, Tracked>();
  private readonly stopWatching: (() => void)[];

  constructor(private readonly services: Services) {
    const { notifications } = services;
    this.stopWatching = [
      notifications.on('mediagate_session', (ended) => {
        for (const caller of this.callers.values()) {
          if (caller.principal.sessionId === ended.id)
            this.close(caller, new AppError('UNAUTHENTICATED', 'The session ended; sign in again.'));
        }
      }),
      notifications.on('mediagate_auth', (change) => {
        for (const caller of this.callers.values()) {
          const { principal } = caller;
          if (principal.accountId === change.accountId || (change.apiKeyId && principal.apiKeyId === change.apiKeyId)) this.recheck(caller);
        }
      }),
      notifications.onReconnect(() => this.callers.forEach((caller) => this.recheck(caller))),
    ];
  }

  /** Follows a socket that authenticated; forgotten when it closes. */
  track(socket: WebSocket, credentials: Credentials, principal: Principal): void {
    const caller: Tracked = { socket, credentials, principal, stale: false, expiry: null, checking: null, checkAgain: false };
    this.callers.set(socket, caller);
    socket.once('close', () => {
      if (caller.expiry) clearTimeout(caller.expiry);
      this.callers.delete(socket);
    });
    this.armExpiry(caller);
  }

  get(socket: WebSocket): Caller | undefined {
    return this.callers.get(socket);
  }

  /** The caller's principal, authenticated again first when a check could not be made; refuses and closes the socket when that fails. */
  async current(socket: WebSocket): Promise<Principal> {
    const caller = this.callers.get(socket);
    if (!caller) throw new AppError('UNAUTHENTICATED');
    if (caller.checking) await caller.checking;
    if (caller.stale) {
      try {
        this.accept(caller, await authenticate(this.services.auth, caller.credentials));
      } catch (err) {
        if (isAppError(err)) this.close(caller, err);
        throw err;
      }
    }
    return caller.principal;
  }

  /** Closes a socket whose credentials were refused: 4401 or 4403 as the error's status says; anything else is a server error. */
  refuse(socket: WebSocket, err: unknown): void {
    if (isAppError(err) && (err.status === 401 || err.status === 403)) {
      const reason = `${err.status === 401 ? 'Unauthorized' : 'Forbidden'}: ${err.message}`;
      socket.close(
        err.status === 401 ? CloseCode.Unauthorized : CloseCode.Forbidden,
        Buffer.byteLength(reason) <= MAX_REASON_BYTES ? reason : reason.split(':')[0],
      );
    } else {
      this.services.log.error({ err }, 'authenticating a WebSocket failed');
      socket.close(CloseCode.InternalServerError, 'Internal server error');
    }
    // One that does not answer the closing handshake must not keep its subscriptions running.
    setTimeout(() => socket.readyState !== socket.CLOSED && socket.terminate(), CLOSE_GRACE_MS).unref();
  }

  stop(): void {
    this.stopWatching.forEach((off) => off());
    for (const caller of this.callers.values()) if (caller.expiry) clearTimeout(caller.expiry);
  }

  /** Authenticates the caller again, now; one check at a time per socket, and one more if asked meanwhile. */
  private recheck(caller: Tracked): void {
    if (caller.checking) {
      caller.checkAgain = true;
      return;
    }
    caller.checking = (async () => {
      do {
        caller.checkAgain = false;
        try {
          this.accept(caller, await authenticate(this.services.auth, caller.credentials));
        } catch (err) {
          if (isAppError(err) && (err.status === 401 || err.status === 403)) {
            this.close(caller, err);
            return;
          }
          // The database away for a moment: the next operation checks again before it runs.
          caller.stale = true;
          this.services.log.warn({ err }, 'could not check a WebSocket’s credentials again');
        }
      } while (caller.checkAgain && this.callers.has(caller.socket));
    })().finally(() => (caller.checking = null));
  }

  private accept(caller: Tracked, principal: Principal): void {
    caller.principal = principal;
    caller.stale = false;
    this.armExpiry(caller);
  }

  private close(caller: Tracked, err: AppError): void {
    if (!this.callers.delete(caller.socket)) return;
    if (caller.expiry) clearTimeout(caller.expiry);
    this.refuse(caller.socket, err);
  }

  /** A timer at the credential's own end (a session's, an OpenID Connect token's), if it has one. */
  private armExpiry(caller: Tracked): void {
    if (caller.expiry) clearTimeout(caller.expiry);
    caller.expiry = null;
    const at = caller.principal.expiresAt?.getTime();
    if (at === undefined) return;
    const wait = at - Date.now();
    if (wait <= 0) {
      this.close(caller, new AppError('UNAUTHENTICATED', 'The sign-in expired; sign in again.'));
      return;
    }
    caller.expiry = setTimeout(() => this.armExpiry(caller), Math.min(wait, MAX_TIMER_MS));
    caller.expiry.unref();
  }
}
