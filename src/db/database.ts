import { MikroORM, type EntityClass } from '@mikro-orm/postgresql';
import { ReflectMetadataProvider } from '@mikro-orm/decorators/legacy';
import { Migrator } from '@mikro-orm/migrations';
import pg from 'pg';
import type { Settings } from '../config.js';
import { startEmbedded, findRunningEmbedded, type EmbeddedDatabase } from './embedded.js';
import { DEFAULT_HOT_POOL_SIZE, HotPool } from './hot-pool.js';
import { notificationsOf, type Notifications } from './notifications.js';
import { Migration20261122000000_initial } from './migrations/Migration20261122000000_initial.js';
import { Migration20261123000000_webhooks } from './migrations/Migration20261123000000_webhooks.js';
import { Migration20261123010000_sessions } from './migrations/Migration20261123010000_sessions.js';
import { Migration20261124000000_notify } from './migrations/Migration20261124000000_notify.js';
import { Migration20261125000000_cursor_precision } from './migrations/Migration20261125000000_cursor_precision.js';
import { Migration20261126000000_history_by_task } from './migrations/Migration20261126000000_history_by_task.js';
import { Migration20261126043000_session_id_token } from './migrations/Migration20261126043000_session_id_token.js';
import { Migration20261127000000_session_notify } from './migrations/Migration20261127000000_session_notify.js';
import { Migration20261128000000_streamed_bytes } from './migrations/Migration20261128000000_streamed_bytes.js';

export const MIGRATIONS = [
  Migration20261122000000_initial,
  Migration20261123000000_webhooks,
  Migration20261123010000_sessions,
  Migration20261124000000_notify,
  Migration20261125000000_cursor_precision,
  Migration20261126000000_history_by_task,
  Migration20261126043000_session_id_token,
  Migration20261127000000_session_notify,
  Migration20261128000000_streamed_bytes,
];

/** An open database: the ORM plus whatever embedded server backs it. */
export interface Database {
  orm: MikroORM;
  /** Where the database answers (the job queue connects there too). */
  clientUrl: string;
  embedded: boolean;
  /** What the database says changed; listening starts with `notifications.start` (serve, worker, tests). */
  notifications: Notifications;
  /** The ledger's and key lookups' own pool of prepared statements (absent: createServices opens one beside the ORM). */
  hot?: HotPool;
  /** DATABASE_READ_URL's ORM, for analysts' reads (absent: they read the primary). */
  read?: MikroORM;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** Every entity the ORM maps: the domain's list, handed down by the composition root. */
  entities: readonly EntityClass<object>[];
  /** Serve the embedded database to operator commands (what `mediagate serve` does). */
  announce?: boolean;
  /** Embedded only: keep it in memory (tests). */
  inMemory?: boolean;
}

/** Opens the configured database: DATABASE_URL, a running server's embedded database, or PGlite directly. */
export async function openDatabase(config: Settings, options: OpenOptions): Promise<Database> {
  let clientUrl = config.databaseUrl;
  let embedded: EmbeddedDatabase | null = null;
  if (!clientUrl && !options.inMemory) {
    const running = findRunningEmbedded(config.dataDir);
    // One process owns a PGlite directory: a second server would corrupt it.
    if (running && options.announce) {
      throw new Error(`Another mediagate server already runs on ${config.dataDir}; stop it first or set MEDIAGATE_DATA_DIR.`);
    }
    clientUrl = running;
  }
  const isEmbedded = !config.databaseUrl;
  if (!clientUrl) {
    embedded = await startEmbedded(options.inMemory ? null : config.dataDir, { announce: options.announce });
    clientUrl = embedded.clientUrl;
  }
  const orm = await initOrm(clientUrl, isEmbedded ? 1 : 10, options.entities);
  // The embedded database runs one statement at a time whatever the number of connections.
  const hot = new HotPool(clientUrl, { size: isEmbedded ? 1 : (config.databasePoolSize ?? DEFAULT_HOT_POOL_SIZE) });
  // An embedded database served by another process keeps its notifications there.
  const notifications = notificationsOf(embedded ? { embedded } : isEmbedded ? null : { clientUrl });
  // Connects on first use: a replica that is down fails only the reads sent to it.
  const read = config.databaseReadUrl && !isEmbedded ? await initOrm(config.databaseReadUrl, 10, options.entities) : undefined;
  return {
    orm,
    clientUrl,
    embedded: isEmbedded,
    notifications,
    hot,
    read,
    async close() {
      await notifications.close();
      await hot.end();
      await read?.close(true);
      await orm.close(true);
      await embedded?.stop();
    },
  };
}

/** The ORM on one connection string, mapping `entities`. One connection for PGlite: it is a single session anyway. */
export async function initOrm(clientUrl: string, poolSize: number, entities: readonly EntityClass<object>[]): Promise<MikroORM> {
  return MikroORM.init({
    clientUrl,
    entities: [...entities],
    metadataProvider: ReflectMetadataProvider,
    extensions: [Migrator],
    migrations: { migrationsList: MIGRATIONS, snapshot: false, silent: true, transactional: true },
    pool: { min: 0, max: poolSize },
    allowGlobalContext: false,
    debug: false,
  });
}

/** The advisory lock's key that serialises migrations between processes ("mgmigrat" in ASCII). */
export const MIGRATION_LOCK_KEY = '7883389972209885556';

/**
 * Applies pending migrations; returns the names applied. `lock` (PostgreSQL): holds a session
 * advisory lock on its own connection meanwhile, so that gateways and workers started at the same
 * moment migrate once, one after the other (the later ones find nothing left to do).
 */
export async function migrate(orm: MikroORM, options: { lock?: boolean } = {}): Promise<string[]> {
  if (!options.lock) return (await orm.migrator.up()).map((m) => m.name);
  const client = new pg.Client({ connectionString: orm.config.get('clientUrl') });
  await client.connect();
  try {
    // Released with the connection if this process dies while it holds the lock.
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    return (await orm.migrator.up()).map((m) => m.name);
  } finally {
    await client.end();
  }
}
