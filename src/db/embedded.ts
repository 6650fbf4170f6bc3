import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The embedded PostgreSQL: PGlite behind its in-process wire-protocol server, so the ordinary driver connects to it. */
export interface EmbeddedDatabase {
  clientUrl: string;
  stop(): Promise<void>;
}

/** Where a running server tells the operator commands how to reach its embedded database. */
export const announcementFile = (dataDir: string) => join(dataDir, 'embedded-db.json');

interface Announcement {
  pid: number;
  host: string;
  port: number;
}

/**
 * Opens PGlite in `dataDir` (or in memory when null) and serves it on 127.0.0.1. With `announce`, the
 * address is written to the data directory so `mediagate` commands reach the database through this
 * process while it runs: only one process may own a PGlite directory.
 */
export async function startEmbedded(dataDir: string | null, options: { announce?: boolean } = {}): Promise<EmbeddedDatabase> {
  let db: PGlite;
  if (dataDir) {
    // PGlite does not create parent folders.
    mkdirSync(join(dataDir, 'pgdata'), { recursive: true });
    db = await PGlite.create({ dataDir: join(dataDir, 'pgdata') });
  } else {
    db = await PGlite.create();
  }
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 16 });
  await server.start();
  const [host, port] = server.getServerConn().split(':');
  const file = dataDir && options.announce ? announcementFile(dataDir) : null;
  if (file) writeFileSync(file, JSON.stringify({ pid: process.pid, host, port: Number(port) } satisfies Announcement), { mode: 0o600 });
  return {
    clientUrl: `postgresql://postgres:postgres@${host}:${port}/postgres`,
    async stop() {
      if (file) rmSync(file, { force: true });
      await server.stop();
      await db.close();
    },
  };
}

/** The address of the embedded database served by a live `mediagate serve`, if one runs on this data directory. */
export function findRunningEmbedded(dataDir: string): string | null {
  let a: Announcement;
  try {
    a = JSON.parse(readFileSync(announcementFile(dataDir), 'utf8')) as Announcement;
  } catch {
    return null;
  }
  try {
    process.kill(a.pid, 0);
  } catch (err) {
    // EPERM: alive but not ours; anything else: the process is gone and the file is stale.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return null;
  }
  return `postgresql://postgres:postgres@${a.host}:${a.port}/postgres`;
}
