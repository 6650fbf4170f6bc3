import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPasswordGate } from './embedded-auth.js';
import { CHANNELS } from './notifications.js';

/** The embedded PostgreSQL: PGlite behind its in-process wire-protocol server, so the ordinary driver connects to it. */
export interface EmbeddedDatabase {
  clientUrl: string;
  /** Calls `handler` with every NOTIFY on the channels in CHANNELS, whichever connection caused it; returns the function that stops it. */
  onNotification(handler: (channel: string, payload: string) => void): () => void;
  /** The database's files as a tarball, which `startEmbedded(null, { loadDataDir })` starts from (a second faster than initdb). */
  dumpDataDir(): Promise<Blob>;
  stop(): Promise<void>;
}

/** Where a running server tells the operator commands how to reach its embedded database. */
export const announcementFile = (dataDir: string) => join(dataDir, 'embedded-db.json');

/** The embedded database's password: generated once, readable by the data directory's owner only. */
export const passwordFile = (dataDir: string) => join(dataDir, 'embedded-db-password');

interface Announcement {
  pid: number;
  host: string;
  port: number;
}

/**
 * Opens PGlite in `dataDir` (or in memory when null) and serves it on 127.0.0.1, behind the password
 * kept in the data directory (a random one of its own in memory). With `announce`, the address is
 * written to the data directory so `mediagate` commands reach the database through this process while
 * it runs: only one process may own a PGlite directory.
 */
export async function startEmbedded(
  dataDir: string | null,
  options: { announce?: boolean; loadDataDir?: Blob } = {},
): Promise<EmbeddedDatabase> {
  let db: PGlite;
  if (dataDir) {
    // PGlite does not create parent folders.
    mkdirSync(join(dataDir, 'pgdata'), { recursive: true });
    db = await PGlite.create({ dataDir: join(dataDir, 'pgdata') });
  } else {
    // In memory, started from a copy of another database's files when given (see dumpDataDir).
    db = await PGlite.create(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {});
  }
  const handlers = new Set<(channel: string, payload: string) => void>();
  const notify = (channel: string, payload: string) => handlers.forEach((handler) => handler(channel, payload));
  // Every connection is the one PGlite session, so this LISTEN, made before any client connects, holds for all of them.
  for (const channel of CHANNELS) await db.listen(channel, (payload) => notify(channel, payload));
  // PGlite's own server listens where only this user can reach it; clients come through the password gate.
  const socketDir = mkdtempSync(join(tmpdir(), 'mediagate-pglite-'));
  socketDirs.add(socketDir);
  const server = new PGLiteSocketServer({ db: readingNotifications(db, notify), path: join(socketDir, 'pglite.sock'), maxConnections: 16 });
  await server.start();
  const password = dataDir ? ensurePassword(dataDir) : randomBytes(32).toString('base64url');
  const gate = await startPasswordGate(password, server.getServerConn());
  const { host, port } = gate;
  const file = dataDir && options.announce ? announcementFile(dataDir) : null;
  if (file) writeFileSync(file, JSON.stringify({ pid: process.pid, host, port } satisfies Announcement), { mode: 0o600 });
  return {
    clientUrl: clientUrl(host, port, password),
    onNotification(handler) {
      handlers.add(handler);
      return () => void handlers.delete(handler);
    },
    dumpDataDir: () => db.dumpDataDir('none') as Promise<Blob>,
    async stop() {
      if (file) rmSync(file, { force: true });
      await gate.close();
      await server.stop();
      // Closing PGlite shuts its PostgreSQL down cleanly: everything is on disk when it resolves.
      await db.close();
      rmSync(socketDir, { recursive: true, force: true });
      socketDirs.delete(socketDir);
    },
  };
}

/** PGlite's socket directories of this process, removed even when it exits without stopping its databases. */
const socketDirs = new Set<string>();
process.once('exit', () => socketDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

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
  let password: string;
  try {
    password = readFileSync(passwordFile(dataDir), 'utf8').trim();
  } catch (err) {
    // Never fall back to opening the directory: the running server owns it.
    throw new Error(
      `A mediagate server runs on ${dataDir}, but its database password cannot be read (${(err as NodeJS.ErrnoException).code ?? err}).`,
    );
  }
  return clientUrl(a.host, a.port, password);
}

const clientUrl = (host: string, port: number, password: string) =>
  `postgresql://postgres:${encodeURIComponent(password)}@${host}:${port}/postgres`;

/** The data directory's password, generated the first time (mode 0600). */
function ensurePassword(dataDir: string): string {
  const file = passwordFile(dataDir);
  try {
    writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  // Whatever the umask, or however the file was copied in: the owner's only.
  chmodSync(file, 0o600);
  return readFileSync(file, 'utf8').trim();
}

/**
 * PGlite as the socket server sees it, with its replies read for notifications. PostgreSQL hands a
 * NOTIFY to the session that listens, which here is every client's: it reaches whichever client
 * committed it, in the raw reply PGlite does not parse (so `listen()` callbacks miss it).
 */
function readingNotifications(db: PGlite, notify: (channel: string, payload: string) => void): PGlite {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'execProtocolRawStream') {
        const exec: PGlite['execProtocolRawStream'] = (message, options) => {
          const reader = new NotificationReader(notify);
          return target.execProtocolRawStream(message, {
            ...options,
            onRawData: (chunk) => {
              reader.push(chunk);
              options.onRawData(chunk);
            },
          });
        };
        return exec;
      }
      // PGlite keeps its state in private fields: its methods must run on PGlite itself, not on the proxy.
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** NotificationResponse in the wire protocol: 'A', length, process id, channel, payload. */
const NOTIFICATION = 0x41;

/** Picks the notifications out of a run of backend messages that may arrive in pieces, skipping every other message. */
export class NotificationReader {
  /** The start of a message whose header or notification body is not complete yet. */
  private partial: Buffer | null = null;
  /** What is left of a message that is not a notification. */
  private skip = 0;

  constructor(private readonly notify: (channel: string, payload: string) => void) {}

  push(chunk: Uint8Array): void {
    let buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.skip >= buf.length) {
      this.skip -= buf.length;
      return;
    }
    buf = buf.subarray(this.skip);
    this.skip = 0;
    if (this.partial) {
      buf = Buffer.concat([this.partial, buf]);
      this.partial = null;
    }
    let at = 0;
    while (at < buf.length) {
      if (buf.length - at < 5) {
        this.partial = Buffer.from(buf.subarray(at));
        return;
      }
      const end = at + 1 + buf.readInt32BE(at + 1);
      if (buf[at] !== NOTIFICATION) {
        if (end > buf.length) {
          this.skip = end - buf.length;
          return;
        }
      } else {
        if (end > buf.length) {
          // Copied: the chunk may be a view of memory PGlite reuses.
          this.partial = Buffer.from(buf.subarray(at));
          return;
        }
        const channelEnd = buf.indexOf(0, at + 9);
        this.notify(buf.toString('utf8', at + 9, channelEnd), buf.toString('utf8', channelEnd + 1, end - 1));
      }
      at = end;
    }
  }
}
