import { SERVERS } from './global-setup.js';

/** After the last test file: the embedded database servers end (each would also end with jest: its standard input closes). */
export default async function globalTeardown() {
  await Promise.all(
    (globalThis[SERVERS] ?? []).map(
      (child) =>
        new Promise((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.stdin.end();
        }),
    ),
  );
}
