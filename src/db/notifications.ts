import createSubscriber from 'pg-listen';

/** The channels the database notifies on (triggers in Migration20261124000000_notify and Migration20261127000000_session_notify), and what each carries. */
export interface ChannelPayloads {
  /** A transcription was opened, or its status or progress changed (parses are not notified). */
  mediagate_job: { id: string; accountId: string; status: string };
  /** A key (apiKeyId), a membership, or an account's roles or sign-in subject changed. */
  mediagate_auth: { apiKeyId?: string; accountId: string };
  /** An account-area session ended (its row id, never its secret): logout, a new sign-in, a revocation. */
  mediagate_session: { id: string; accountId: string };
}
export type Channel = keyof ChannelPayloads;
export const CHANNELS: readonly Channel[] = ['mediagate_job', 'mediagate_auth', 'mediagate_session'];

/** A database that hands over its NOTIFYs itself (the embedded one: see startEmbedded). */
export interface NotificationSource {
  onNotification(handler: (channel: string, payload: string) => void): () => void;
}

/** How the listening connection shows in pg_stat_activity. */
export const LISTENER_NAME = 'mediagate-listen';

/** While notifications flow, a subscriber re-reads on its own only this rarely: a backstop, not a poll. */
export const BACKSTOP_MS = 30_000;
/** While the listener is down (or there is none), a subscriber re-reads this often so it never waits forever. */
export const OFFLINE_RECHECK_MS = 2_000;

export interface NotificationLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * What the database says changed, from one listening connection per process. A notification can be
 * missed while that connection is down: after it is back, `onReconnect` handlers run, and they
 * re-read whatever they watch.
 */
export interface Notifications {
  /** Calls `handler` with each notification on `channel`; returns the function that stops it. */
  on<C extends Channel>(channel: C, handler: (payload: ChannelPayloads[C]) => void): () => void;
  /** Calls `handler` each time listening resumes after a lost connection; returns the function that stops it. */
  onReconnect(handler: () => void): () => void;
  /** How long a subscriber may wait before re-reading on its own: BACKSTOP_MS while listening, OFFLINE_RECHECK_MS otherwise. */
  readonly recheckMs: number;
  /** Starts listening (serve, worker); one-off commands never do. */
  start(log: NotificationLog): Promise<void>;
  close(): Promise<void>;
}

/** The subscribers' side, shared by every way of listening. */
abstract class Hub implements Notifications {
  private readonly handlers = new Map<string, Set<(payload: never) => void>>();
  private readonly reconnectHandlers = new Set<() => void>();
  protected log: NotificationLog | null = null;
  protected listening = false;

  get recheckMs(): number {
    return this.listening ? BACKSTOP_MS : OFFLINE_RECHECK_MS;
  }

  on<C extends Channel>(channel: C, handler: (payload: ChannelPayloads[C]) => void): () => void {
    const set = this.handlers.get(channel) ?? new Set();
    this.handlers.set(channel, set);
    set.add(handler);
    return () => void set.delete(handler);
  }

  onReconnect(handler: () => void): () => void {
    this.reconnectHandlers.add(handler);
    return () => void this.reconnectHandlers.delete(handler);
  }

  abstract start(log: NotificationLog): Promise<void>;
  abstract close(): Promise<void>;

  protected deliver(channel: string, payload: unknown): void {
    for (const handler of this.handlers.get(channel) ?? []) this.safely(() => handler(payload as never));
  }

  protected reconnected(): void {
    for (const handler of this.reconnectHandlers) this.safely(handler);
  }

  // One subscriber's bug must not keep the others from hearing.
  private safely(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log?.warn({ err }, 'a notification handler failed');
    }
  }
}

/**
 * PostgreSQL: one connection that only LISTENs, through pg-listen, which reconnects (for ever, backing
 * off to 5 s) and LISTENs again after a lost connection; a query every 30 s finds a silently dead one.
 */
class PostgresNotifications extends Hub {
  private subscriber: ReturnType<typeof createSubscriber.default> | null = null;
  private closed = false;

  constructor(private readonly clientUrl: string) {
    super();
  }

  async start(log: NotificationLog): Promise<void> {
    this.log = log;
    const subscriber = createSubscriber.default(
      { connectionString: this.clientUrl, application_name: LISTENER_NAME },
      {
        retryTimeout: 0,
        retryInterval: (attempt) => {
          // pg-listen would retry for ever after close(): throwing here ends its loop.
          if (this.closed) throw new Error('closed');
          return Math.min(100 * 2 ** attempt, 5_000);
        },
      },
    );
    this.subscriber = subscriber;
    let connectedBefore = false;
    subscriber.events.on('connected', () => {
      if (this.closed) return void subscriber.close().catch(() => undefined);
      this.listening = true;
      if (!connectedBefore) return void (connectedBefore = true);
      log.info({}, 'listening for database notifications again');
      this.reconnected();
    });
    subscriber.events.on('reconnect', (attempt) => {
      this.listening = false;
      if (attempt === 1) log.warn({}, 'lost the database notification connection; reconnecting');
    });
    subscriber.events.on('error', (err) => log.warn({ err }, 'database notifications'));
    subscriber.events.on('notification', ({ channel, payload }) => this.deliver(channel, payload));
    await subscriber.connect();
    await Promise.all(CHANNELS.map((channel) => subscriber.listenTo(channel)));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listening = false;
    await this.subscriber?.close().catch(() => undefined);
  }
}

/** The embedded database in this process: it hands over every NOTIFY itself (see startEmbedded). */
class EmbeddedNotifications extends Hub {
  private stop: (() => void) | null = null;

  constructor(private readonly embedded: NotificationSource) {
    super();
  }

  async start(log: NotificationLog): Promise<void> {
    this.log = log;
    this.stop = this.embedded.onNotification((channel, text) => {
      try {
        this.deliver(channel, JSON.parse(text));
      } catch (err) {
        log.warn({ err, channel }, 'an unreadable database notification');
      }
    });
    this.listening = true;
  }

  async close(): Promise<void> {
    this.listening = false;
    this.stop?.();
  }
}

/** No listener: one-off commands, and an embedded database served by another process (its NOTIFYs stay there). */
class NoNotifications extends Hub {
  async start(log: NotificationLog): Promise<void> {
    log.info({}, 'no database notifications here: watchers re-read every few seconds');
  }
  async close(): Promise<void> {}
}

/** The notifications of a database: its own embedded one, PostgreSQL at `clientUrl`, or none. */
export function notificationsOf(source: { embedded: NotificationSource } | { clientUrl: string } | null): Notifications {
  if (!source) return new NoNotifications();
  return 'embedded' in source ? new EmbeddedNotifications(source.embedded) : new PostgresNotifications(source.clientUrl);
}
