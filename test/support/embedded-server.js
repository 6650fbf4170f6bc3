/**
 * One jest worker's embedded database, in a process of its own for the whole run (started by
 * test/support/global-setup.js), so that a test file does not pay PGlite's start (about 3 s of CPU,
 * a third of it in the kernel) for a database it uses for seconds.
 *
 * A test file leases it over a control connection (see leaseSharedEmbedded in test-database.ts):
 * - on connect, the database is emptied to what the migrated template holds (every table of the
 *   application truncated, pg-boss's schema dropped, the session's settings and locks reset); if its
 *   schema no longer matches the template's (a test altered it), it is started again from the
 *   template instead. The answer is `{"clientUrl": …}`: an address of its own for this lease.
 * - the database's notifications then come down the same connection, one JSON line each.
 * - closing the connection ends the lease: every database connection made through its address is
 *   cut, so nothing a finished file left open can reach the next one's data.
 * While one lease is held, another connection is answered `{"busy": true}` (a file that wants a
 * second database at once starts one in its own process).
 *
 * Run by node directly (not through jest), so it is JavaScript and uses the built product (dist/),
 * which `npm test` builds first. Its address is the one line it prints: `{"port": …}`. It ends with
 * its parent: when its standard input closes.
 */
import 'reflect-metadata';
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate, MIGRATIONS } from '../../dist/db/database.js';
import { startEmbedded } from '../../dist/db/embedded.js';
import { openOrm } from '../../dist/root.js';
import { templateKey, writeMigratedTemplate } from './migrated-template.js';
import { startSeverableProxy } from './severable-proxy.js';

/**
 * The migrated template of the built migrations (see migrated-template.js), kept in the temporary
 * directory for later runs. Two servers that both find it missing both make it; each renames its
 * own copy into place whole, so no one reads half of one.
 */
async function migratedTemplate() {
  const file = join(tmpdir(), `mediagate-test-pglite-dist-${templateKey(MIGRATIONS)}.tar`);
  if (!existsSync(file)) {
    const partial = `${file}.${process.pid}.partial`;
    await writeMigratedTemplate(partial, { startEmbedded, openOrm, migrate });
    renameSync(partial, file);
  }
  return new Blob([readFileSync(file)]);
}

const template = await migratedTemplate();

/** What must be as the template left it: every schema, relation, column, function, trigger, role and extension, and the migrations applied. */
const FINGERPRINT = `
  select md5(string_agg(item, ',' order by item)) as fingerprint from (
    select 'schema ' || nspname as item from pg_namespace where nspname not like 'pg\\_%' and nspname <> 'information_schema'
    union all select 'relation ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public'
    union all select 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
      from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
      where n.nspname = 'public' and a.attnum > 0 and not a.attisdropped
    union all select 'function ' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') ' || md5(p.prosrc) from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'public'
    union all select 'trigger ' || tgrelid::regclass || '.' || tgname from pg_trigger where not tgisinternal
    union all select 'constraint ' || conrelid::regclass || '.' || conname || ' ' || pg_get_constraintdef(oid) from pg_constraint where connamespace = 'public'::regnamespace
    union all select 'role ' || rolname from pg_roles
    union all select 'extension ' || extname from pg_extension
    union all select 'migration ' || name from mikro_orm_migrations
  ) items`;

/** Empties the application's tables and whatever a queue added, and puts the one session back as a new connection finds it. */
const RESET = `
  do $$ begin
    execute (select 'truncate ' || string_agg(format('%I.%I', schemaname, tablename), ', ') || ' restart identity cascade'
             from pg_tables where schemaname = 'public' and tablename <> 'mikro_orm_migrations');
  end $$;
  drop schema if exists pgboss cascade;
  reset all;
  select pg_advisory_unlock_all();
  discard sequences;
  discard temp;`;

async function query(clientUrl, sql) {
  const client = new pg.Client({ connectionString: clientUrl });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

const fingerprintOf = async (clientUrl) => (await query(clientUrl, FINGERPRINT)).rows[0].fingerprint;

/** The lease being held: where its notifications go, and the relay its connections go through. */
let lease = null;

/** The database with its listeners: notifications go to whichever lease is current. */
async function start() {
  const embedded = await startEmbedded(null, { loadDataDir: template });
  embedded.onNotification((channel, payload) => lease?.send({ channel, payload }));
  return { embedded, fingerprint: await fingerprintOf(embedded.clientUrl) };
}

let database = await start();

async function prepare() {
  await query(database.embedded.clientUrl, RESET);
  if ((await fingerprintOf(database.embedded.clientUrl)) !== database.fingerprint) {
    // A test changed the schema itself: a copy of the template replaces this database.
    await database.embedded.stop();
    database = await start();
  }
}

const control = createServer((socket) => {
  socket.on('error', () => socket.destroy());
  const send = (message) => socket.writable && socket.write(`${JSON.stringify(message)}\n`);
  if (lease) {
    send({ busy: true });
    socket.end();
    return;
  }
  const current = { send: () => undefined, relay: null };
  lease = current;
  socket.on('close', () => {
    current.relay?.close();
    if (lease === current) lease = null;
  });
  const lend = async () => {
    await prepare();
    const url = new URL(database.embedded.clientUrl);
    // A relay of the lease's own: closing it at the lease's end cuts every connection made through it.
    const relay = await startSeverableProxy({ host: url.hostname, port: Number(url.port) });
    current.relay = relay;
    if (socket.destroyed) return relay.close();
    url.port = String(relay.port);
    send({ clientUrl: url.toString() });
    current.send = send;
  };
  lend().catch((err) => {
    send({ error: String(err?.stack ?? err) });
    socket.end();
  });
});
control.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: control.address().port })}\n`);
});

// Ends with the jest run that started it, however that run ends.
process.stdin.on('close', () => process.exit(0)).resume();
