import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** A JSON log line of the CLI (pino), as far as the tests read it. */
export interface LogEntry {
  msg?: string;
  url?: string;
}

/**
 * The first JSON log line on a started CLI process's stdout that `ready` accepts (`mediagate serve`
 * says where it listens, `mediagate worker` that it waits). Rejects when the process exits first,
 * with `output()` (what the caller collected) in the message.
 */
export function readyEntry(
  child: ChildProcess,
  ready: (entry: LogEntry) => boolean,
  what: string,
  output: () => string,
): Promise<LogEntry> {
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let entry: LogEntry;
      try {
        entry = JSON.parse(line);
      } catch {
        return;
      }
      if (ready(entry)) resolve(entry);
    });
    child.once('exit', () => reject(new Error(`${what} exited before it was ready:\n${output()}`)));
  });
}
