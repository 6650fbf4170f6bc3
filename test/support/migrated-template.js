import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';

/**
 * The embedded database with every migration applied, as a tarball of its files, which
 * `startEmbedded(null, { loadDataDir })` starts from in a fifth of a second instead of running
 * initdb and the migrations. Plain JavaScript, given the product's parts, because two kinds of
 * caller make it: test-database.ts on the TypeScript sources (through jest), and the workers'
 * database servers (embedded-server.js) on the built ones (through node).
 */

/** A name for the template of these migrations: a hash of their code, so a changed migration makes a new one. */
export const templateKey = (migrations) =>
  createHash('sha256')
    .update(migrations.map((m) => m.toString()).join('\n'))
    .digest('hex')
    .slice(0, 16);

/** Migrates a fresh in-memory embedded database and writes its files to `file`. */
export async function writeMigratedTemplate(file, { startEmbedded, openOrm, migrate }) {
  const embedded = await startEmbedded(null);
  try {
    const orm = await openOrm(embedded.clientUrl, 1);
    try {
      await migrate(orm);
    } finally {
      await orm.close(true);
    }
    writeFileSync(file, Buffer.from(await (await embedded.dumpDataDir()).arrayBuffer()));
  } finally {
    await embedded.stop();
  }
}
