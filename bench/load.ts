import autocannon from 'autocannon';
import { readFileSync, writeFileSync } from 'node:fs';

/** One kind of request a scenario sends; `authorization` takes the next key of `keys` per request when there are several. */
export interface LoadSpec {
  url: string;
  body: string;
  keys: readonly string[];
  connections: number;
  seconds: number;
  /** Whether a response body is a successful answer (a GraphQL error comes with status 200). */
  isOk: (body: string) => boolean;
  /** A body per request instead of `body` (each request naming a page of its own). */
  bodyFor?: () => string;
  /** Whether a successful answer holds all it should (e.g. what the media read found); those that do not are counted. */
  isComplete?: (body: string) => boolean;
}

export interface LoadResult {
  /** Responses of any status. */
  responses: number;
  /** Successful answers, by `isOk`. */
  ok: number;
  /** Successful answers that `isComplete` found lacking. */
  incomplete: number;
  status2xx: number;
  non2xx: number;
  /** Connection errors and timeouts. */
  errors: number;
  reqPerSec: number;
  p50: number;
  p99: number;
  statusCodes: Record<string, number>;
  /** From the first request to the last answer, seconds. */
  elapsedSeconds: number;
  /** Every answer's latency, ms, for percentiles over several runs. */
  latencies: number[];
}

/** What autocannon's client keeps of its own progress (not in its typings). */
interface ClientProgress {
  reqsMade: number;
  responseMax: number;
}

/**
 * Closed-loop load with autocannon for `seconds`, then a drain: autocannon's own stop destroys its
 * sockets with requests still in flight, which the server then finishes (and charges) unseen, so
 * the ledger could never be checked to the credit. Instead each connection, once time is up, sends
 * nothing more and ends after its last answer; autocannon's duration is only a backstop.
 */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  let next = 0;
  let ok = 0;
  let incomplete = 0;
  let draining = false;
  let lastAnswerAt = 0;
  const startedAt = performance.now();
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${spec.keys[0]}` };
  const options: autocannon.Options = {
    url: spec.url,
    connections: spec.connections,
    duration: spec.seconds + 120,
    requests: [
      {
        method: 'POST',
        headers,
        body: spec.body,
        ...((spec.keys.length > 1 || spec.bodyFor) && {
          setupRequest: (req: autocannon.Request) => ({
            ...req,
            headers: { ...headers, authorization: `Bearer ${spec.keys[next++ % spec.keys.length]}` },
            ...(spec.bodyFor && { body: spec.bodyFor() }),
          }),
        }),
      },
    ],
    verifyBody: (body) => {
      if (spec.isOk(String(body))) {
        ok++;
        if (spec.isComplete && !spec.isComplete(String(body))) incomplete++;
      }
      return true;
    },
  };
  let instance!: autocannon.Instance;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(options, (err, result) => (err ? reject(err) : resolve(result)));
  });
  const latencies: number[] = [];
  instance.on('response', (client, _status, _bytes, responseTime) => {
    lastAnswerAt = performance.now();
    latencies.push(responseTime);
    // Called before the client sends its next request: a budget of what it already sent stops it.
    if (draining) (client as unknown as ClientProgress).responseMax = (client as unknown as ClientProgress).reqsMade;
  });
  const timer = setTimeout(() => (draining = true), spec.seconds * 1000);
  const result = await done.finally(() => clearTimeout(timer));
  const responses = result['2xx'] + result.non2xx;
  const elapsedSeconds = (Math.max(lastAnswerAt, startedAt + 1) - startedAt) / 1000;
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s?.count ?? 0]));
  return summarize({
    responses,
    ok,
    incomplete,
    status2xx: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    statusCodes,
    elapsedSeconds,
    latencies,
  });
}

/**
 * One load spread over several servers (gateways on one database), as a balancer spreads
 * connections: connection i talks to `urls[i % n]`, and the keys are dealt round robin, request k
 * of the stream carrying key k, so server j sees keys j, j + n, j + 2n, ... Each server's share
 * drains as runLoad's does; the answers are added up over the time the longest share took.
 */
export async function runSpreadLoad(spec: LoadSpec, urls: readonly string[]): Promise<LoadResult> {
  if (!urls.length || spec.connections < urls.length)
    throw new Error(`${spec.connections} connections cannot reach ${urls.length} servers`);
  const shares = urls.map((url, j) => ({
    ...spec,
    url,
    connections: Math.floor(spec.connections / urls.length) + (j < spec.connections % urls.length ? 1 : 0),
    keys: spec.keys.length >= urls.length ? spec.keys.filter((_, k) => k % urls.length === j) : spec.keys,
  }));
  return mergeSideBySide(await Promise.all(shares.map((share) => runLoad(share))));
}

/** Runs that went side by side as one: answers added up, the time the longest took, percentiles over every answer. */
export function mergeSideBySide(runs: readonly LoadResult[]): LoadResult {
  return summarize({ ...combineLoads(runs), elapsedSeconds: Math.max(...runs.map((r) => r.elapsedSeconds)) });
}

/** Several runs of one scenario as one: their answers and their time added up, percentiles over every answer. */
export function combineLoads(runs: readonly LoadResult[]): LoadResult {
  const add = (f: (r: LoadResult) => number) => runs.reduce((sum, r) => sum + f(r), 0);
  const statusCodes: Record<string, number> = {};
  for (const r of runs) for (const [code, n] of Object.entries(r.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  return summarize({
    responses: add((r) => r.responses),
    ok: add((r) => r.ok),
    incomplete: add((r) => r.incomplete),
    status2xx: add((r) => r.status2xx),
    non2xx: add((r) => r.non2xx),
    errors: add((r) => r.errors),
    statusCodes,
    elapsedSeconds: add((r) => r.elapsedSeconds),
    latencies: runs.flatMap((r) => r.latencies),
  });
}

function summarize(r: Omit<LoadResult, 'reqPerSec' | 'p50' | 'p99'>): LoadResult {
  const sorted = Float64Array.from(r.latencies).sort();
  // The smallest latency at or above which the given share of answers lies (nearest rank), whole ms.
  const percentile = (p: number) => (sorted.length ? Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]) : 0);
  return { ...r, reqPerSec: Math.round(r.responses / r.elapsedSeconds), p50: percentile(0.5), p99: percentile(0.99) };
}

/** Linux's clock ticks per second (USER_HZ), the unit of /proc's CPU times. */
const CLOCK_TICKS = 100;

/** /proc's clock ticks in milliseconds. */
export const ticksToMs = (ticks: number): number => (ticks * 1000) / CLOCK_TICKS;

/**
 * A process's CPU in clock ticks: its own and its ended children's (fields 14 to 17 of
 * /proc/<pid>/stat, counted after the command name, which may hold spaces). Throws once it is gone.
 */
export function processCpuTicks(pid: number | string): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
}

/**
 * What a process spent over a stretch of time: its peak resident memory (the kernel's high-water
 * mark, reset at the start with clear_refs 5, or the highest of samples taken every 100 ms where the
 * reset is refused) and its CPU time (user + system), which unlike a profile's wall-clock samples
 * does not count the time other processes on the same cores took from it. The CPU of its children
 * that ended (ffprobe runs) counts as its own.
 */
export function watchProcess(pid: number): { stop(): { rssMb: number; cpuMs: number } } {
  const status = () => readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status())?.[1] ?? 0);
  const cpuTicks = () => processCpuTicks(pid);
  let reset = true;
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    reset = false;
  }
  let peak = 0;
  const sample = () => {
    try {
      peak = Math.max(peak, kb('VmRSS'));
    } catch {
      // The process is gone; the peak so far stands.
    }
  };
  sample();
  const ticksBefore = cpuTicks();
  const timer = setInterval(sample, 100);
  return {
    stop() {
      clearInterval(timer);
      const cpuMs = ticksToMs(cpuTicks() - ticksBefore);
      sample();
      try {
        if (reset) peak = Math.max(peak, kb('VmHWM'));
      } catch {
        // As above.
      }
      return { rssMb: Math.round(peak / 1024), cpuMs };
    },
  };
}
