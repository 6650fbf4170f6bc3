import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { resolve } from 'node:path';
import { combineLoads, type LoadResult } from './load.js';

/** Who answers a scenario: reference (a), reference (b), or the gateway itself. */
export type Contender = 'proxy' | 'reference' | 'gateway';

export interface Scenario {
  id: string;
  label: string;
  contender: Contender;
  path: string;
  /** The request body, given the page URL to parse. */
  body: (pageUrl: string) => string;
  /** Which keys the requests carry: the hot account's, or the next of the spread accounts' per request. */
  keys: 'hot' | 'spread' | 'none';
  isOk: (body: string) => boolean;
  /** Whether each successful answer is charged the parse price (false: no credit may move). */
  charges: boolean;
  /** The reference (b) scenario this one is divided by; every parse is also divided by the proxy. */
  reference?: string;
  /** Each request names an ordinary page of its own (`/ordinary/<n>`), whose media the parse must read. */
  ordinary?: boolean;
  /** Whether a successful answer holds what the media read should have found (counted when not). */
  isComplete?: (body: string) => boolean;
}

const parseBody = (url: string) => JSON.stringify({ url, quality: '720' });
/** What the scenarios read of an answer: a parse's status and media, or GraphQL's data and errors. */
interface Answer {
  status?: unknown;
  errors?: unknown;
  data?: Record<string, { status?: unknown; id?: unknown } | null> | null;
  media?: { durationSeconds?: unknown; kind?: unknown; height?: unknown } | null;
}
/** The answer as JSON, or null when it is not JSON. */
const json = (body: string): Answer | null => {
  try {
    return JSON.parse(body) as Answer;
  } catch {
    return null;
  }
};
const succeeded = (body: string) => json(body)?.status === 'SUCCEEDED';
/** GraphQL answers 200 with `errors` too: only data without errors is a success. */
const graphqlData = (field: string) => (body: string) => {
  const answer = json(body);
  return answer && !answer.errors ? (answer.data?.[field] ?? null) : null;
};

export const SCENARIOS: readonly Scenario[] = [
  {
    id: 'proxy',
    label: '(a) bare proxy: page fetch only',
    contender: 'proxy',
    path: '/parse',
    body: (url) => JSON.stringify({ url }),
    keys: 'none',
    isOk: (body) => json(body)?.status === 200,
    charges: false,
  },
  {
    id: 'ref-hot',
    label: '(b) reference pg pipeline, hot',
    contender: 'reference',
    path: '/parse',
    body: parseBody,
    keys: 'hot',
    isOk: succeeded,
    charges: true,
  },
  {
    id: 'ref-spread',
    label: '(b) reference pg pipeline, spread',
    contender: 'reference',
    path: '/parse',
    body: parseBody,
    keys: 'spread',
    isOk: succeeded,
    charges: true,
  },
  {
    id: 'rest-hot',
    label: 'gateway POST /api/parse, hot',
    contender: 'gateway',
    path: '/api/parse',
    body: parseBody,
    keys: 'hot',
    isOk: succeeded,
    charges: true,
    reference: 'ref-hot',
  },
  {
    id: 'rest-spread',
    label: 'gateway POST /api/parse, spread',
    contender: 'gateway',
    path: '/api/parse',
    body: parseBody,
    keys: 'spread',
    isOk: succeeded,
    charges: true,
    reference: 'ref-spread',
  },
  {
    id: 'rest-ordinary',
    label: 'gateway POST /api/parse, ordinary pages (media read), spread',
    contender: 'gateway',
    path: '/api/parse',
    body: parseBody,
    keys: 'spread',
    isOk: succeeded,
    charges: true,
    ordinary: true,
    // The page says nothing of size or length: a read that failed leaves them null.
    isComplete: (body) => {
      const media = json(body)?.media;
      return typeof media?.durationSeconds === 'number' && (media.kind !== 'video' || typeof media.height === 'number');
    },
  },
  {
    id: 'graphql-spread',
    label: 'gateway GraphQL parse, spread',
    contender: 'gateway',
    path: '/graphql',
    body: (url) =>
      JSON.stringify({
        query:
          'mutation Parse($input: ParseInput!) { parse(input: $input) { id status media { url kind height } credits { charged balance } } }',
        variables: { input: { url, quality: '720' } },
      }),
    keys: 'spread',
    isOk: (body) => graphqlData('parse')(body)?.status === 'SUCCEEDED',
    charges: true,
    reference: 'ref-spread',
  },
  {
    id: 'me',
    label: 'gateway GraphQL { me }, spread',
    contender: 'gateway',
    path: '/graphql',
    body: () => JSON.stringify({ query: '{ me { id credits { available held } } }' }),
    keys: 'spread',
    isOk: (body) => typeof graphqlData('me')(body)?.id === 'string',
    charges: false,
  },
];

/** What every row says of the stretches of load it sums up. */
export interface Measured {
  reqPerSec: number;
  p50: number;
  p99: number;
  ok: number;
  /** Answers that were not a success, plus connection errors and timeouts. */
  failed: number;
  statusCodes: Record<string, number>;
  /** Peak resident memory of the process that answered (the highest of any one, with several), MB. */
  rssMb: number;
  /** CPU time (user + system) of the processes that answered, together, per successful answer, ms. */
  cpuMsPerAnswer: number;
  /** What the ledger checks after each stretch found wrong, each once. */
  ledgerProblems: string[];
}

/** One stretch of load, as the single-gateway and the many-gateway runs both measure it. */
export interface MeasuredSlice {
  load: LoadResult;
  rssMb: number;
  cpuMs: number;
  problems: string[];
}

/** The stretches of one scenario summed up: their combined load, and the figures every row reports. */
export function measured(parts: readonly MeasuredSlice[]): { load: LoadResult; figures: Measured } {
  const load = combineLoads(parts.map((p) => p.load));
  return {
    load,
    figures: {
      reqPerSec: load.reqPerSec,
      p50: load.p50,
      p99: load.p99,
      ok: load.ok,
      failed: load.responses - load.ok + load.errors,
      statusCodes: load.statusCodes,
      rssMb: Math.max(...parts.map((p) => p.rssMb)),
      cpuMsPerAnswer: round2(parts.reduce((sum, p) => sum + p.cpuMs, 0) / Math.max(load.ok, 1)),
      ledgerProblems: [...new Set(parts.flatMap((p) => p.problems))],
    },
  };
}

/** One measured scenario at one number of connections. */
export interface Row extends Measured {
  scenario: string;
  label: string;
  connections: number;
  /** Successful answers lacking what the scenario's `isComplete` asks (ordinary pages: the media's size or length). */
  incomplete?: number;
  vsReference: number | null;
  vsProxy: number | null;
  /** null: nothing to check (the proxy). */
  ledger: 'PASS' | 'FAIL' | null;
  /** With --profile, the gateway's statements per answer, by shape. */
  statements?: { total: number; shapes: Record<string, number> };
}

export interface Target {
  name: string;
  value: number | null;
  floor: string;
  met: boolean | null;
}

/**
 * Issue 9's targets (and issue 19's ordinary pages), read off the highest connection count. The memory target is the gateway's
 * alone: with the embedded database the process also holds PostgreSQL (PGlite, its buffers and its
 * compiled WebAssembly), so its RSS is shown but not judged; a PostgreSQL run judges it.
 */
export function targets(rows: readonly Row[], { embedded = false }: { embedded?: boolean } = {}): Target[] {
  const top = Math.max(...rows.map((r) => r.connections));
  const at = (id: string) => rows.find((r) => r.scenario === id && r.connections === top);
  const ratio = (a?: Row, b?: Row) => (a && b?.reqPerSec ? round2(a.reqPerSec / b.reqPerSec) : null);
  const restP99 = Math.max(...['rest-hot', 'rest-spread'].map((id) => at(id)?.p99 ?? -1));
  const gatewayRss = Math.max(
    ...rows.filter((r) => SCENARIOS.find((s) => s.id === r.scenario)?.contender === 'gateway').map((r) => r.rssMb),
    -1,
  );
  // [what, value, floor, whether the value meets it; null: shown, not judged]
  const list: [string, number | null, string, ((v: number) => boolean) | null][] = [
    [`REST parse ÷ reference, hot (${top} conns)`, ratio(at('rest-hot'), at('ref-hot')), '≥ 1.0 (goal 1.5)', (v) => v >= 1],
    [`REST parse ÷ reference, spread (${top} conns)`, ratio(at('rest-spread'), at('ref-spread')), '≥ 1.0 (goal 1.5)', (v) => v >= 1],
    [`GraphQL parse ÷ REST parse, spread (${top} conns)`, ratio(at('graphql-spread'), at('rest-spread')), '≥ 0.85', (v) => v >= 0.85],
    [`REST parse p99 ms, worst of hot and spread (${top} conns)`, restP99 < 0 ? null : restP99, '≤ 100 (goal 50)', (v) => v <= 100],
    embedded
      ? [
          'gateway peak RSS MB, any scenario (PGlite inside)',
          gatewayRss < 0 ? null : gatewayRss,
          '≤ 250 for the gateway alone: not judged here',
          null,
        ]
      : ['gateway peak RSS MB, any scenario', gatewayRss < 0 ? null : gatewayRss, '≤ 250', (v) => v <= 250],
    [`REST parse hot ÷ spread (${top} conns)`, ratio(at('rest-hot'), at('rest-spread')), '≥ 0.6', (v) => v >= 0.6],
    [
      `REST parse, ordinary pages ÷ stated pages, spread (${top} conns)`,
      ratio(at('rest-ordinary'), at('rest-spread')),
      '≥ 0.25 (goal 0.5)',
      (v) => v >= 0.25,
    ],
  ];
  return list.map(([name, value, floor, ok]) => ({ name, value, floor, met: value === null || ok === null ? null : ok(value) }));
}

export const round2 = (n: number) => Math.round(n * 100) / 100;

/** A Markdown table, so a run's output can be pasted into the README as it is. */
export function markdownTable(header: readonly string[], lines: ReadonlyArray<ReadonlyArray<string | number>>): string {
  const cells = [header, ...lines].map((l) => l.map(String));
  const width = header.map((_, i) => Math.max(...cells.map((l) => l[i].length)));
  const line = (l: string[]) => `| ${l.map((c, i) => (i === 0 ? c.padEnd(width[i]) : c.padStart(width[i]))).join(' | ')} |`;
  return [
    line(cells[0]),
    `|${width.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
    ...cells.slice(1).map(line),
  ].join('\n');
}

/** Writes a run's results, with the machine they were measured on, as JSON to `file`, and says where (and whether a ledger failed). */
export function writeResults(file: string, fields: Record<string, unknown>, ledgerMismatch: boolean): void {
  mkdirSync(resolve(file, '..'), { recursive: true });
  const machine = { cpus: availableParallelism(), cpu: cpus()[0]?.model ?? 'unknown', node: process.version };
  writeFileSync(file, `${JSON.stringify({ finishedAt: new Date(), machine, ...fields }, null, 2)}\n`);
  console.log(`\nresults: ${resolve(file)}${ledgerMismatch ? '\nLEDGER MISMATCH: see the FAIL rows above' : ''}`);
}
