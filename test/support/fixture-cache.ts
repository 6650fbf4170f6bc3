import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** How long a builder may go without finishing before a waiter gives up on it. */
const WAIT_MS = 10 * 60_000;

/**
 * A file or directory made once and kept at `path` (in the temporary directory, named by what it is
 * made from), shared by parallel jest workers and later runs: the first to ask builds it while the
 * others wait on a lock, and it is built beside `path` and renamed into place whole, so no one
 * ever reads half of it. A lock left by a process that has ended is taken over.
 */
export async function cachedPath(path: string, build: (partial: string) => Promise<void>): Promise<string> {
  const lock = `${path}.lock`;
  const started = Date.now();
  while (!existsSync(path)) {
    if (await takeLock(lock)) {
      try {
        if (existsSync(path)) break;
        const partial = `${path}.${process.pid}.partial`;
        await rm(partial, { recursive: true, force: true });
        await build(partial);
        await rename(partial, path).catch(async (err: NodeJS.ErrnoException) => {
          // Only after a lock taken over twice can two have built it: the first one stays.
          if (!existsSync(path)) throw err;
          await rm(partial, { recursive: true, force: true });
        });
      } finally {
        await release(lock);
      }
      break;
    }
    if (Date.now() - started > WAIT_MS) throw new Error(`${path}: still being made by another process after ${WAIT_MS} ms`);
    await sleep(100);
  }
  return path;
}

/** Takes the lock (a directory holding the owner's pid, renamed into place whole), or clears it when its owner has ended. */
async function takeLock(lock: string): Promise<boolean> {
  const mine = await mkdtemp(`${lock}.${process.pid}-`);
  await writeFile(join(mine, 'pid'), String(process.pid));
  try {
    await rename(mine, lock);
    return true;
  } catch (err) {
    await rm(mine, { recursive: true, force: true });
    if (!['EEXIST', 'ENOTEMPTY'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
    const owner = Number(await readFile(join(lock, 'pid'), 'utf8').catch(() => '0'));
    if (owner > 0 && !isAlive(owner)) await release(lock);
    return false;
  }
}

/** Moves the lock aside before removing it: never an empty lock directory another process could be renamed onto. */
async function release(lock: string): Promise<void> {
  const aside = `${lock}.released-${process.pid}-${Date.now()}`;
  try {
    await rename(lock, aside);
  } catch (err) {
    // Someone else cleared it first.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  await rm(aside, { recursive: true, force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
