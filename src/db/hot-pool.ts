import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** One SQL statement of the hot path, prepared once per connection under its name (`$1..$n` placeholders). */
export interface Statement {
  name: string;
  text: string;
}

/** How large the hot path's pool is, and where it reports a lost connection. */
export interface HotPoolOptions {
  /** Connections at most. */
  size: number;
  log?: { warn(obj: object, msg: string): void };
}

/**
 * Connections of the hot path on PostgreSQL when DATABASE_POOL_SIZE is unset. Measured with
 * `npm run bench` on 2 cores (gateway, database and load on the same machine), 50 connections:
 * with batched ledger writes 4 and 10 did the same within the noise (a few batches are in flight
 * at a time), 20 no better; 10 is the ORM's own pool size and the bench reference's.
 */
export const DEFAULT_HOT_POOL_SIZE = 10;

/** A SQLSTATE: the statement failed, the connection is fine (a network error has a Node code instead). */
const SQLSTATE = /^[0-9A-Z]{5}$/;
/** SQLSTATEs after which the server has closed the session (admin shutdown, crash, ...). */
const SESSION_GONE = /^(08|57P0)/;

/**
 * The hot path's own `pg` pool, beside the ORM's: its statements are NAMED, so PostgreSQL parses
 * and plans each one once per connection instead of once per request (MikroORM's `execute` inlines
 * parameters into the SQL text, which makes every statement new to the server). A connection is
 * kept after a statement fails (a unique violation, a deadlock, a check), unlike `pool.query`,
 * which throws it and its prepared statements away; it is dropped only when the connection itself
 * broke.
 */
export class HotPool {
  private readonly pool: pg.Pool;
  /** Each connection's suffix for statement names, and the names it has prepared. */
  private readonly sessions = new WeakMap<pg.PoolClient, { suffix: string; prepared: Set<string> }>();
  /** Unique per pool, so that pools of several processes sharing one embedded session never meet. */
  private readonly tag = randomBytes(3).toString('hex');
  private serial = 0;

  constructor(clientUrl: string, options: HotPoolOptions) {
    this.pool = new pg.Pool({
      connectionString: clientUrl,
      max: options.size,
      application_name: 'mediagate-hot',
      // Connections are kept with their prepared statements; a one-off command can still exit without closing the pool.
      idleTimeoutMillis: 0,
      allowExitOnIdle: true,
    });
    this.pool.on('connect', (client) => {
      // Suffixed per connection: on the embedded database every connection is the one PGlite session,
      // where prepared statements are shared and outlive the connection that made them.
      this.sessions.set(client, { suffix: `${this.tag}_${++this.serial}`, prepared: new Set() });
      client.on('error', (err) => options.log?.warn({ err }, 'hot-path database connection lost'));
    });
    // An idle connection's error comes here; without a listener it would end the process.
    this.pool.on('error', (err) => options.log?.warn({ err }, 'hot-path database connection lost'));
  }

  /** Runs one named statement and returns its rows. */
  async query<R>(statement: Statement, values: readonly unknown[]): Promise<R[]> {
    const client = await this.pool.connect();
    const session = this.sessions.get(client)!;
    const name = `${statement.name}_${session.suffix}`;
    try {
      const result = await client.query<R & pg.QueryResultRow>({ name, text: statement.text, values: values as unknown[] });
      session.prepared.add(name);
      client.release();
      return result.rows;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      const statementFailed = typeof code === 'string' && SQLSTATE.test(code) && !SESSION_GONE.test(code);
      client.release(statementFailed ? undefined : (err as Error));
      throw err;
    }
  }

  /**
   * Closes every connection. Their statements are dropped first: on the embedded database they
   * would outlive the connection in the one session (a command run beside a server leaves nothing).
   */
  async end(): Promise<void> {
    const idle = await Promise.all(Array.from({ length: this.pool.idleCount }, () => this.pool.connect()));
    await Promise.all(
      idle.map(async (client) => {
        const prepared = [...(this.sessions.get(client)?.prepared ?? [])];
        if (prepared.length) await client.query(prepared.map((n) => `deallocate "${n}"`).join('; ')).catch(() => undefined);
        client.release();
      }),
    );
    await this.pool.end();
  }
}
