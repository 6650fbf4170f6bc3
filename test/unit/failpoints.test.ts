import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { failpoint, parseFailpoints } from '../../src/failpoints.js';

const NODE = join(process.cwd(), 'node_modules/.bin/node');

/** Runs a script that hits failpoint `x` three times, printing after each hit, under the given variable. */
function hitThrice(variable: string | undefined) {
  const script = `const { failpoint } = await import(${JSON.stringify(join(process.cwd(), 'src/failpoints.ts'))});
    for (const n of [1, 2, 3]) { failpoint('x'); failpoint('other'); console.log('after hit ' + n); }`;
  const env = { PATH: process.env.PATH ?? '', ...(variable === undefined ? {} : { MEDIAGATE_FAILPOINTS: variable }) };
  return spawnSync(NODE, ['--no-warnings', '--input-type=module', '-e', script], { env, encoding: 'utf8' });
}

describe('failpoints', () => {
  it('read name=crash@N lists, and refuse anything else', () => {
    expect([...parseFailpoints('task.afterHold=crash@3, sweep.before=crash')]).toEqual([
      ['task.afterHold', 3],
      ['sweep.before', 1],
    ]);
    expect(parseFailpoints('').size).toBe(0);
    expect(() => parseFailpoints('task.afterHold=crash@0')).toThrow(/name=crash@N/);
    expect(() => parseFailpoints('task.afterHold=sleep@1')).toThrow(/name=crash@N/);
  });

  it('do nothing when MEDIAGATE_FAILPOINTS was not set at start', () => {
    expect(() => failpoint('task.afterHold')).not.toThrow();
    const run = hitThrice(undefined);
    expect(run.signal).toBeNull();
    expect(run.stdout).toBe('after hit 1\nafter hit 2\nafter hit 3\n');
  });

  it('kill the process with SIGKILL at the Nth hit of the armed name, saying which', () => {
    const run = hitThrice('x=crash@2');
    expect(run.signal).toBe('SIGKILL');
    expect(run.stdout).toBe('after hit 1\n');
    expect(run.stderr).toContain('failpoint x: crashing (SIGKILL)');
    // Set but empty: enabled, nothing armed.
    expect(hitThrice('').stdout).toBe('after hit 1\nafter hit 2\nafter hit 3\n');
  });
});
