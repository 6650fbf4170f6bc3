import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

/** The parts of V8's .cpuprofile (what `node --cpu-prof` writes) read here. */
interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
    positionTicks?: { line: number; ticks: number }[];
  }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  /** functionName url:line, the line where the function starts. */
  name: string;
  /** What the function belongs to: a package, the gateway's own code, Node itself, or V8. */
  area: string;
  ms: number;
  /** Share of the busy (non-idle) time. */
  share: number;
  /** The line inside the function with the most ticks over the whole profile. */
  hotLine: number | null;
  /** For V8's and Node's own functions: the package or gateway function that called them most. */
  via: string | null;
}

/** A stretch of the run, in microseconds of the monotonic clock. */
export interface ProfileWindow {
  from: number;
  to: number;
}

export interface ProfileSummary {
  windowMs: number;
  busyMs: number;
  top: SelfTime[];
  /** Self time by package, V8's and Node's own functions counted to the package that called them. */
  areas: { area: string; ms: number; share: number }[];
}

/**
 * Self time per function in a .cpuprofile, counted from the samples that fall inside `windows`
 * (microseconds of the monotonic clock, the one `process.hrtime` and V8's profiler share; null: all), each
 * sample weighing the time to the next one; aggregated by function name and place.
 */
export function summarizeProfile(path: string, windows: readonly ProfileWindow[] | null, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  let t = profile.startTime;
  let windowUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    const weight = profile.timeDeltas[i + 1] ?? 0;
    if (windows && !windows.some((w) => t >= w.from && t <= w.to)) continue;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + weight);
    windowUs += weight;
  }
  // The nearest caller that is a package's or the gateway's own code.
  const caller = (id: number): CpuProfile['nodes'][number] | null => {
    for (let p = parent.get(id); p !== undefined; p = parent.get(p)) {
      const node = byId.get(p)!;
      if (isCode(node.callFrame.url)) return node;
    }
    return null;
  };
  const functions = new Map<string, { area: string; us: number; ticks: Map<number, number>; via: Map<string, number> }>();
  const areas = new Map<string, number>();
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    const name = `${functionName || '(anonymous)'}${url ? ` ${shortUrl(url)}:${lineNumber + 1}` : ''}`;
    const entry = functions.get(name) ?? { area: areaOf(url, functionName), us: 0, ticks: new Map(), via: new Map() };
    entry.us += us;
    for (const p of node.positionTicks ?? []) entry.ticks.set(p.line, (entry.ticks.get(p.line) ?? 0) + p.ticks);
    const by = isCode(url) ? null : caller(id);
    if (by) {
      const via = `${by.callFrame.functionName || '(anonymous)'} ${shortUrl(by.callFrame.url)}:${by.callFrame.lineNumber + 1}`;
      entry.via.set(via, (entry.via.get(via) ?? 0) + us);
    }
    functions.set(name, entry);
    const owner = by ? areaOf(by.callFrame.url, '') : entry.area;
    areas.set(owner, (areas.get(owner) ?? 0) + us);
  }
  const busyUs = windowUs - idleUs;
  const share = (us: number) => Math.round((us / Math.max(busyUs, 1)) * 1000) / 10;
  const most = (m: Map<number | string, number>) => (m.size ? [...m.entries()].sort((a, b) => b[1] - a[1])[0][0] : null);
  return {
    windowMs: Math.round(windowUs / 1000),
    busyMs: Math.round(busyUs / 1000),
    top: [...functions.entries()]
      .sort((a, b) => b[1].us - a[1].us)
      .slice(0, top)
      .map(([name, f]) => ({
        name,
        area: f.area,
        ms: Math.round(f.us / 1000),
        share: share(f.us),
        hotLine: most(f.ticks) as number | null,
        via: most(f.via) as string | null,
      })),
    areas: [...areas.entries()].sort((a, b) => b[1] - a[1]).map(([area, us]) => ({ area, ms: Math.round(us / 1000), share: share(us) })),
  };
}

/** A package's file or the gateway's own, as opposed to V8's and Node's. */
const isCode = (url: string) => url.startsWith('file:') || url.startsWith('/');

function shortUrl(url: string): string {
  const path = url.replace(/^file:\/\//, '');
  const inModules = path.lastIndexOf('/node_modules/');
  if (inModules >= 0) return path.slice(inModules + '/node_modules/'.length);
  return path.startsWith('/') ? relative(process.cwd(), path) : path;
}

function areaOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : 'V8 / native';
  if (url.startsWith('node:')) return 'node internals';
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  // The bench's build (dist-bench/) holds its own servers and copies of the few gateway modules they use.
  if (url.includes('/dist-bench/bench/')) return 'bench';
  return url.includes('/dist/') || url.includes('/dist-bench/src/') ? 'mediagate' : 'other';
}
