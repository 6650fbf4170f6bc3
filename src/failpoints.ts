import { writeSync } from 'node:fs';

/**
 * Failpoints: named places between the statements of a task's life (after the hold, after the
 * provider answered, after the capture, in the worker, around cancel and sweep) where a test makes
 * this process die at once, to prove that a crash at any of them neither loses a credit nor charges
 * one twice (test/model/ledger.model.test.ts).
 *
 * Test-only, and off unless MEDIAGATE_FAILPOINTS is in the environment when the process starts. It
 * is read here from process.env, not through config.ts, because it is not an operator's setting:
 * it has no place in the configuration table or in `config check`, and no deployment sets it.
 * Unset, `failpoint` is an empty function chosen once at load, so the calls cost nothing
 * measurable and nothing can arm them later.
 *
 * Set, its value arms failpoints at start: comma-separated `name=crash@N`, meaning SIGKILL this
 * process at the Nth hit of `name` (`name=crash` is `crash@1`; an empty value arms none). A parent
 * that started the process with an IPC channel (child_process `fork`, or stdio 'ipc') re-arms it at
 * any time by sending `{ failpoints: spec }`; the new spec replaces the old one, counts start
 * again, and the process answers `{ failpointsArmed: spec }` once it applies. That channel is the
 * only way in: no HTTP route exists for it.
 */
export const FAILPOINTS_VARIABLE = 'MEDIAGATE_FAILPOINTS';

/** Armed failpoints: how many hits are left before each one crashes the process. */
type Armed = Map<string, number>;

/** Reads `name=crash@N,...`; throws on anything else, so that a test's typo is not a silent no-op. */
export function parseFailpoints(spec: string): Armed {
  const armed: Armed = new Map();
  for (const part of spec
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([\w.-]+)=crash(?:@([1-9]\d*))?$/.exec(part);
    if (!m) throw new Error(`${FAILPOINTS_VARIABLE}: "${part}" is not name=crash@N`);
    armed.set(m[1], Number(m[2] ?? 1));
  }
  return armed;
}

function enabled(initial: string): (name: string) => void {
  let armed = parseFailpoints(initial);
  process.on('message', (message: unknown) => {
    const spec = (message as { failpoints?: unknown } | null)?.failpoints;
    if (typeof spec !== 'string') return;
    armed = parseFailpoints(spec);
    process.send?.({ failpointsArmed: spec });
  });
  // The channel must not keep a process alive that would otherwise exit (a CLI command).
  process.channel?.unref();
  return (name) => {
    const left = armed.get(name);
    if (left === undefined) return;
    if (left > 1) {
      armed.set(name, left - 1);
      return;
    }
    // Written synchronously, so the test can tell which failpoint fired; then no cleanup of any kind.
    writeSync(2, `failpoint ${name}: crashing (SIGKILL)\n`);
    process.kill(process.pid, 'SIGKILL');
  };
}

const initial = process.env[FAILPOINTS_VARIABLE];

/** Marks a place where a test may crash this process; does nothing unless MEDIAGATE_FAILPOINTS was set at start. */
export const failpoint: (name: string) => void = initial === undefined ? () => {} : enabled(initial);
