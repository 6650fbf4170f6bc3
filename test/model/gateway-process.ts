import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const NODE = join(process.cwd(), 'node_modules/.bin/node');
const CLI = join(process.cwd(), 'dist/cli/main.js');

/** Resident memory of a process, in bytes (0 once it is gone). */
export function rss(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** How a gateway process ended. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The failpoint that fired, as the process wrote it just before killing itself. */
  failpoint: string | null;
}

/**
 * One `mediagate serve` as a child process, so that a crash is a real SIGKILL of a real process:
 * its sockets, its pool, its timers and its in-flight requests die with it. Failpoints are armed
 * through the IPC channel that src/failpoints.ts listens on when MEDIAGATE_FAILPOINTS is set.
 */
export class GatewayProcess {
  readonly exited: Promise<Exit>;
  /** Where it listens, once it does. */
  url = '';
  private exit: Exit | null = null;
  private readonly tail: string[] = [];
  private firedFailpoint: string | null = null;

  private constructor(private readonly child: ChildProcess) {
    const keep = (line: string) => {
      this.tail.push(line.slice(0, 2000));
      if (this.tail.length > 60) this.tail.shift();
    };
    createInterface({ input: child.stdout! }).on('line', keep);
    createInterface({ input: child.stderr! }).on('line', (line) => {
      keep(line);
      const m = /^failpoint (\S+): crashing/.exec(line);
      if (m) this.firedFailpoint = m[1];
    });
    this.exited = new Promise((resolve) => {
      // 'close', not 'exit': the last lines (the failpoint's) have been read by then.
      child.once('close', (code, signal) => {
        this.exit = { code, signal, failpoint: this.firedFailpoint };
        resolve(this.exit);
      });
    });
  }

  /**
   * Starts a gateway on the given environment and resolves once it listens (HOST/PORT are chosen
   * here); with `worker`, a `mediagate worker` that resolves once it waits for jobs (url stays '').
   */
  static async start(env: Record<string, string>, timeoutMs = 60_000, command: 'serve' | 'worker' = 'serve'): Promise<GatewayProcess> {
    const ready = command === 'serve' ? 'mediagate is listening' : 'mediagate worker is waiting';
    const child = spawn(NODE, [CLI, command], {
      env: {
        PATH: process.env.PATH ?? '',
        ...env,
        HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: 'info',
        MEDIAGATE_FAILPOINTS: env.MEDIAGATE_FAILPOINTS ?? '',
      },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const gateway = new GatewayProcess(child);
    gateway.url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the ${command} process did not start in ${timeoutMs} ms:\n${gateway.lastLines()}`));
      }, timeoutMs);
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (!line.includes(ready)) return;
        clearTimeout(timer);
        resolve((JSON.parse(line) as { url?: string }).url ?? '');
      });
      void gateway.exited.then((e) => {
        clearTimeout(timer);
        reject(new Error(`the ${command} process exited (${e.code ?? e.signal}) before listening:\n${gateway.lastLines()}`));
      });
    });
    return gateway;
  }

  /** The process id (its /proc entry tells its memory). */
  get pid(): number {
    return this.child.pid ?? 0;
  }

  get alive(): boolean {
    return this.exit === null;
  }

  /** The last lines the process wrote (for a failure's message). */
  lastLines(): string {
    return this.tail.join('\n');
  }

  /**
   * Replaces the armed failpoints (`name=crash@N,...`; '' disarms). Resolves true once the process
   * applied it, false if it died first (an armed failpoint may fire before the answer comes back).
   */
  async arm(spec: string): Promise<boolean> {
    if (!this.alive) return false;
    const applied = new Promise<boolean>((resolve) => {
      const onMessage = (m: unknown) => {
        if ((m as { failpointsArmed?: string }).failpointsArmed !== spec) return;
        this.child.off('message', onMessage);
        resolve(true);
      };
      this.child.on('message', onMessage);
      void this.exited.then(() => {
        this.child.off('message', onMessage);
        resolve(false);
      });
    });
    // A send to a process that is dying fails; `exited` gives the answer then.
    this.child.send({ failpoints: spec }, () => undefined);
    return applied;
  }

  /** Kills the process at once (SIGKILL), as a crash or an OOM killer would; resolves once it is gone. */
  async kill(): Promise<Exit> {
    if (this.alive) this.child.kill('SIGKILL');
    return this.exited;
  }

  /** Waits for the process to end, up to `ms`; null if it still runs. */
  async waitExit(ms: number): Promise<Exit | null> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Ends the process the way an operator would (SIGTERM: graceful), or SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000): Promise<Exit> {
    if (this.alive) this.child.kill('SIGTERM');
    const ended = await this.waitExit(graceMs);
    if (ended) return ended;
    this.child.kill('SIGKILL');
    return this.exited;
  }
}
