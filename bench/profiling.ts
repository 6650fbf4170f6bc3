import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { summarizeProfile, type ProfileSummary, type ProfileWindow } from './cpu-profile.js';
import { markdownTable } from './scenarios.js';

/** Node flags that make a process write a CPU profile into `dir` when it exits. */
export const cpuProfileFlags = (dir: string) => ['--cpu-prof', `--cpu-prof-dir=${dir}`];

/** The gateway's statement counts so far (see statement-count.preload.ts). */
export async function statementCounts(pid: number, file: string): Promise<Map<string, number>> {
  rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  for (const until = Date.now() + 5000; !existsSync(file); ) {
    if (Date.now() > until) throw new Error('the gateway did not report its statement counts');
    await new Promise((r) => setTimeout(r, 20));
  }
  return new Map(Object.entries(JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>));
}

/** The statements made between two counts, by shape. */
export function countsSince(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  return new Map([...after].map(([shape, n]) => [shape, n - (before.get(shape) ?? 0)]));
}

/** Several stretches' statements added up, by shape. */
export function sumCounts(parts: readonly Map<string, number>[]): Map<string, number> {
  const total = new Map<string, number>();
  for (const part of parts) for (const [shape, n] of part) total.set(shape, (total.get(shape) ?? 0) + n);
  return total;
}

/** The statements made (by shape, as countsSince gives them) per answer, most frequent first. */
export function statementsPerAnswer(made: Map<string, number>, answers: number): { total: number; shapes: Record<string, number> } {
  const per = [...made.entries()]
    .map(([shape, n]) => [shape, n / Math.max(answers, 1)] as const)
    .filter(([, n]) => n >= 0.005)
    .sort((a, b) => b[1] - a[1]);
  const round = (n: number) => Math.round(n * 100) / 100;
  return { total: round(per.reduce((sum, [, n]) => sum + n, 0)), shapes: Object.fromEntries(per.map(([shape, n]) => [shape, round(n)])) };
}

/** The profile a process left in `dir`, summarized over `windows` (the whole run when null); null when none was written. */
export function readProfile(dir: string, windows: readonly ProfileWindow[] | null): (ProfileSummary & { file: string }) | null {
  const written = existsSync(dir) ? readdirSync(dir).find((f) => f.endsWith('.cpuprofile')) : undefined;
  return written ? { file: join(dir, written), ...summarizeProfile(join(dir, written), windows) } : null;
}

export function printProfile(title: string, p: ProfileSummary): void {
  console.log(`\n${title}: ${p.busyMs} ms busy of ${p.windowMs} ms`);
  const dash = (v: number | string | null) => (v === null ? '—' : String(v));
  console.log(
    markdownTable(
      ['self time: function', 'area', 'ms', '% busy', 'hot line', 'called from'],
      p.top.map((f) => [f.name, f.area, f.ms, f.share, dash(f.hotLine), dash(f.via)]),
    ),
  );
  console.log(
    '\n' +
      markdownTable(
        ['self time by package (V8 and Node counted to their caller)', 'ms', '% busy'],
        p.areas.slice(0, 12).map((a) => [a.area, a.ms, a.share]),
      ),
  );
}
