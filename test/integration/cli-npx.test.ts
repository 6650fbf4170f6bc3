import { jest } from '@jest/globals';
import { execFile } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = process.cwd();

/** The PATH of a user's shell: without this project's node_modules/.bin, which npm scripts and npx put first. */
const userPath = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((dir) => !dir.includes('node_modules'))
  .join(delimiter);

/** The Node that runs npm on this machine (npm tells its children), which may be older than the project's. */
const machineNode = process.env.npm_node_execpath ?? 'node';

describe('the mediagate command as the documentation runs it', () => {
  // npx installs the checkout into its cache before the first run: seconds on a busy machine.
  jest.setTimeout(120_000);

  it('`npx mediagate` prints its answer and nothing of npm, whatever Node the machine has', async () => {
    const { stdout, stderr } = await run('npx', ['mediagate', '--help'], { cwd: root, env: { ...process.env, PATH: userPath } });
    expect(stdout).toContain('Usage: mediagate');
    // npm judges the engines against the machine's Node; the command itself runs on the project's.
    expect(stderr).not.toMatch(/npm (warn|error)/);
  });

  it('started by the machine’s Node directly, it runs on the project’s own', async () => {
    const { stdout } = await run(machineNode, [join(root, 'bin/mediagate.js'), '--version'], {
      cwd: root,
      env: { ...process.env, PATH: userPath },
    });
    const [major, minor] = /Node v(\d+)\.(\d+)/.exec(stdout)!.slice(1).map(Number);
    expect(major * 100 + minor).toBeGreaterThanOrEqual(22 * 100 + 19);
  });
});
