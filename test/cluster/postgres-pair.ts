import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort, until } from './cluster-world.js';

const run = promisify(execFile);
const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** As the postgres user when this runs as root (PostgreSQL refuses to run as root). */
const asPostgres = (command: string, args: string[]) =>
  userInfo().uid === 0 ? run('runuser', ['-u', 'postgres', '--', join(BIN, command), ...args]) : run(join(BIN, command), args);

/** A server of this test's own: a data directory, a port, and how to stop it. */
class Server {
  constructor(
    readonly dir: string,
    readonly port: number,
    private readonly socketDir: string,
  ) {}

  url(database: string): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async start(): Promise<void> {
    const opts = `-p ${this.port} -k ${this.socketDir} -c listen_addresses=127.0.0.1 -c fsync=off -c shared_preload_libraries=pg_stat_statements`;
    await asPostgres('pg_ctl', ['-D', this.dir, '-o', opts, '-l', `${this.dir}.log`, '-w', 'start']);
  }

  /** `immediate`: as a crash (the replica "down"); `fast`: a clean stop. */
  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await asPostgres('pg_ctl', ['-D', this.dir, '-m', mode, '-w', 'stop']).catch(() => undefined);
  }

  async query<T extends pg.QueryResultRow = pg.QueryResultRow>(database: string, text: string, params: unknown[] = []): Promise<T[]> {
    const c = new pg.Client({ connectionString: this.url(database) });
    await c.connect();
    try {
      return (await c.query<T>(text, params)).rows;
    } finally {
      await c.end();
    }
  }
}

/**
 * A PostgreSQL primary made by initdb in a temporary directory (the machine's own server is left as
 * it is: it permits no replication), and a streaming replica of it made by `pg_basebackup -R`.
 */
export class PostgresPair {
  private constructor(
    private readonly root: string,
    readonly primary: Server,
    readonly replica: Server,
  ) {}

  static async start(): Promise<PostgresPair> {
    const root = mkdtempSync(join(tmpdir(), 'mediagate-pg-'));
    if (userInfo().uid === 0) {
      const { stdout } = await run('id', ['-u', 'postgres']);
      const { stdout: gid } = await run('id', ['-g', 'postgres']);
      chownSync(root, Number(stdout.trim()), Number(gid.trim()));
    }
    const primary = new Server(join(root, 'primary'), await freePort(), root);
    const replica = new Server(join(root, 'replica'), await freePort(), root);
    const pair = new PostgresPair(root, primary, replica);
    try {
      // initdb's pg_hba.conf trusts local and 127.0.0.1 connections, replication included.
      await asPostgres('initdb', ['-D', primary.dir, '-A', 'trust', '-U', 'postgres', '--no-sync']);
      await primary.start();
      await asPostgres('pg_basebackup', [
        '-R',
        '-D',
        replica.dir,
        '-h',
        '127.0.0.1',
        '-p',
        String(primary.port),
        '-U',
        'postgres',
        '-X',
        'stream',
      ]);
      await replica.start();
      await until(
        'the replica is in recovery and streaming',
        async () => (await replica.query('postgres', 'select pg_is_in_recovery() as r'))[0].r === true,
        30_000,
        100,
      );
    } catch (err) {
      await pair.stop();
      throw err;
    }
    return pair;
  }

  /** Waits until the replica has replayed everything the primary has written so far. */
  async caughtUp(withinMs = 30_000): Promise<void> {
    const [{ lsn }] = await this.primary.query('postgres', 'select pg_current_wal_lsn()::text as lsn');
    await until(
      'the replica replays the primary',
      async () => (await this.replica.query('postgres', `select pg_last_wal_replay_lsn() >= $1::pg_lsn as done`, [lsn]))[0].done === true,
      withinMs,
      50,
    );
  }

  async stop(): Promise<void> {
    await this.replica.stop('immediate');
    await this.primary.stop('fast');
    rmSync(this.root, { recursive: true, force: true });
  }
}
