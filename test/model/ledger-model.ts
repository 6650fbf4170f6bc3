import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { MEDIA, TIMING, sleep, type Answer, type Door, type World } from './ledger-world.js';
import { checkInvariants, type JobRow } from './ledger-invariants.js';
import { OPERATOR } from '../../src/modules/principal.js';

/*
 * The model of the ledger test: accounts, keys and every request sent, what each answer may be
 * given what the model knows, and what each success or failure does to the balances. The commands
 * (ledger-commands.ts) drive it; the invariants (ledger-invariants.ts) hold it to the database.
 */

/**
 * What a request asks for: a parse that succeeds or fails (its page answers 500), a transcription
 * waited for (priced by the media's length), a queued one (worked in the background), or a queued
 * one of media that never finishes downloading (it can only be canceled or swept).
 */
export type OpKind = 'parseOk' | 'parseFail' | 'transcribe' | 'queued' | 'endless';
export const WAITED: ReadonlySet<OpKind> = new Set(['parseOk', 'parseFail', 'transcribe']);

/** One request as the model saw it, and what became of its job. */
export interface Op {
  kind: OpKind;
  /** What success costs (for endless: its hold; it never succeeds). */
  price: number;
  door: Door;
  body: Record<string, string>;
  idemKey: string | null;
  /** The x-request-id sent, which the job row keeps: how a request whose answer was lost is found. */
  requestId: string;
  /** The gateway instance it is sent to (chosen by its command, else the next in turn when sent). */
  instance?: number;
  /**
   * sent: no answer yet · lost: the connection died (crash) and the job is to be looked up ·
   * pending: a job is open · succeeded / failed: settled · none: no job came of it.
   */
  state: 'sent' | 'lost' | 'pending' | 'succeeded' | 'failed' | 'none';
  jobId?: string;
  /** The error code it ended with (the answer's, or the job's). */
  error?: string | null;
  charged?: number;
  balanceAfter?: number | null;
  /** The REST body of a success, which a REST replay must repeat exactly. */
  restBody?: Record<string, unknown>;
}

export interface KeyModel {
  id: string;
  secret: string;
  revoked: boolean;
}

export interface AccountModel {
  id: string;
  keys: KeyModel[];
  member: boolean;
  granted: number;
  /** Credits the model knows were captured: the price of every success, once. */
  charged: number;
  ops: Op[];
}

export class LedgerModel {
  private seq = 0;
  constructor(
    readonly runId: string,
    readonly accounts: AccountModel[],
  ) {}

  freshIdempotencyKey(): string {
    this.seq += 1;
    return `${this.runId}-${this.seq}`;
  }

  /** Ops whose job may still move credits. */
  open(acc: AccountModel): Op[] {
    return acc.ops.filter((o) => o.state === 'pending' || o.state === 'lost' || o.state === 'sent');
  }

  /** Available credits at worst: every open job of the account charged its full price. */
  spendable(acc: AccountModel): number {
    return acc.granted - acc.charged - this.open(acc).reduce((s, o) => s + o.price, 0);
  }

  liveKey(acc: AccountModel, from = 0): KeyModel | undefined {
    const live = acc.keys.filter((k) => !k.revoked);
    return live.length ? live[from % live.length] : undefined;
  }
}

/** Initial credits of the accounts of one run: one rich, one poor, one broke (402s happen). */
export const INITIAL_CREDITS = [10, 3, 0];

/** Fresh accounts (each with two keys) on the shared database: one model run. */
export async function newRun(world: World): Promise<LedgerModel> {
  // A failed run may have left a gateway dead or armed; each run starts from live, unarmed ones.
  for (let i = 0; i < world.instances; i++) {
    if (!world.gateways[i].alive) await world.restart(i);
    if (!(await world.gateways[i].arm(''))) await world.restart(i);
  }
  const runId = `r${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const accounts: AccountModel[] = [];
  for (const [i, credits] of INITIAL_CREDITS.entries()) {
    const acc = await world.operator.accounts.create(OPERATOR, { name: `model ${runId} ${i}`, credits, membershipDays: 30 });
    const keys: KeyModel[] = [];
    for (const name of ['first', 'second']) {
      const created = await world.operator.apiKeys.create(OPERATOR, acc.id, name);
      keys.push({ id: created.apiKey.id, secret: created.key, revoked: false });
    }
    accounts.push({ id: acc.id, keys, member: true, granted: credits, charged: 0, ops: [] });
  }
  world.stats.runs += 1;
  return new LedgerModel(runId, accounts);
}

/** A request to make, as generated (indices are taken modulo what exists when it runs). */
export interface WorkSpec {
  kind: OpKind | 'replay';
  media: number;
  account: number;
  key: number;
  door: Door;
  keyed: boolean;
  /** For replay: which earlier keyed request of the account to send again. */
  target: number;
}

export const specText = (s: WorkSpec) =>
  `${s.kind}${s.kind === 'transcribe' || s.kind === 'queued' ? `(m${s.media})` : ''}@a${s.account}k${s.key}/${s.door}${s.keyed ? '/keyed' : ''}${s.kind === 'replay' ? `#${s.target}` : ''}`;

/** Turns a spec into an op of the model's state now; a replay with nothing to replay is a keyed parse. */
export function materialize(
  m: LedgerModel,
  w: World,
  spec: WorkSpec,
  accountIndex = spec.account % m.accounts.length,
): { acc: AccountModel; op: Op; key: KeyModel } {
  const acc = m.accounts[accountIndex];
  const key = acc.keys[spec.key % acc.keys.length];
  const requestId = w.nextRequestId();
  if (spec.kind === 'replay') {
    const targets = acc.ops.filter((o) => o.idemKey && WAITED.has(o.kind));
    if (targets.length) {
      const t = targets[spec.target % targets.length];
      return {
        acc,
        key,
        op: { kind: t.kind, price: t.price, door: spec.door, body: t.body, idemKey: t.idemKey, requestId, state: 'sent' },
      };
    }
  }
  const kind: OpKind = spec.kind === 'replay' ? 'parseOk' : spec.kind;
  const media = MEDIA[spec.media % MEDIA.length];
  const site = w.site.origin;
  const body: Record<string, string> =
    kind === 'parseOk'
      ? { url: `${site}/ok` }
      : kind === 'parseFail'
        ? { url: `${site}/broken` }
        : kind === 'endless'
          ? { mediaUrl: `${site}/endless.mp3` }
          : { mediaUrl: site + media.path };
  const price = kind === 'transcribe' || kind === 'queued' ? media.price : 1;
  const keyed = WAITED.has(kind) && (spec.keyed || spec.kind === 'replay');
  return {
    acc,
    key,
    op: { kind, price, door: spec.door, body, idemKey: keyed ? m.freshIdempotencyKey() : null, requestId, state: 'sent' },
  };
}

/** What the world looked like to one request just before it was sent. */
interface Before {
  keyLive: boolean;
  member: boolean;
  available: number;
  held: number;
  /** Prices of the account's other open jobs and requests sent at the same time: they may take credits first. */
  competing: number;
  /** No other request and no open job on the account: the answer is exactly predictable. */
  alone: boolean;
  /** Another open job or request of the account may release its hold (everything but a parse of a good page may fail). */
  releases: boolean;
  /** An armed failpoint may kill the gateway under this request. */
  crashArmed: boolean;
  /** A success already holding the op's idempotency key: the answer must be its replay. */
  prior?: Op;
  /** An open job holding the key: 409 while it runs. */
  running?: Op;
}

async function balanceOf(w: World, accountId: string): Promise<{ available: number; held: number }> {
  const { rows } = await w.sql.query<{ available: string; held: string }>(
    `select available, held from credit_balance where account_id = $1`,
    [accountId],
  );
  return { available: Number(rows[0]?.available ?? 0), held: Number(rows[0]?.held ?? 0) };
}

export async function before(m: LedgerModel, w: World, acc: AccountModel, op: Op, key: KeyModel, crashArmed: boolean): Promise<Before> {
  const bal = await balanceOf(w, acc.id);
  const sameKey = op.idemKey ? acc.ops.filter((o) => o !== op && o.idemKey === op.idemKey) : [];
  return {
    keyLive: !key.revoked,
    member: acc.member,
    ...bal,
    // Sent ops of the batch are open too (pushed before any is sent).
    competing: m
      .open(acc)
      .filter((o) => o !== op)
      .reduce((s, o) => s + o.price, 0),
    alone: m.open(acc).filter((o) => o !== op).length === 0,
    releases: m.open(acc).some((o) => o !== op && o.kind !== 'parseOk'),
    crashArmed,
    prior: sameKey.find((o) => o.state === 'succeeded'),
    running: sameKey.find((o) => o.state === 'pending'),
  };
}

export class ModelViolation extends Error {}

function fail(w: World, op: Op, answer: Answer, why: string): never {
  const where = w.instances > 1 ? ` instance=${op.instance}` : '';
  throw new ModelViolation(
    `${why}\n  request: ${op.kind} ${op.door} ${JSON.stringify(op.body)} key=${op.idemKey} id=${op.requestId}${where}\n  answer: ${JSON.stringify(answer).slice(0, 600)}\n  gateway log:\n${w.lastLines(3000)}`,
  );
}

/**
 * Judges one answer against what the model allows, and books its effect: a fresh success charges
 * exactly the price, a replay charges nothing and repeats the stored answer, everything else
 * charges nothing. Where requests overlap the model allows each outcome the overlap could explain
 * and lets the ledger checks (exact sums) decide whether it was paid for correctly.
 */
export function judge(_m: LedgerModel, w: World, acc: AccountModel, op: Op, b: Before, answer: Answer): void {
  w.count(w.stats.outcomes, answer.kind === 'error' ? answer.code : answer.kind);
  if (answer.kind === 'lost') {
    if (!b.crashArmed) fail(w, op, answer, 'the gateway stopped answering although no failpoint was armed');
    op.state = 'lost';
    return;
  }
  const expectError = (code: string) => {
    if (answer.kind !== 'error' || answer.code !== code) fail(w, op, answer, `expected ${code}`);
    op.state = 'none';
  };
  if (!b.keyLive) {
    expectError('UNAUTHENTICATED');
    return;
  }
  if (!b.member) {
    expectError('MEMBERSHIP_REQUIRED');
    return;
  }
  if (b.prior) {
    const p = b.prior;
    if (answer.kind !== 'ok' || answer.jobId !== p.jobId || answer.charged !== p.charged || answer.balance !== p.balanceAfter) {
      fail(w, op, answer, `expected the replay of job ${p.jobId} (charged ${p.charged}, balance ${p.balanceAfter})`);
    }
    if (op.door === 'rest' && p.restBody && !isDeepStrictEqual(answer.body, p.restBody))
      fail(w, op, answer, 'a REST replay must repeat the first answer exactly');
    w.stats.replaysChecked += 1;
    op.state = 'none';
    return;
  }
  // The hold is placed first: what it takes, and whether anything could have stood in its way.
  const hold = WAITED.has(op.kind) ? op.price : 1;
  const mayBeShort = b.available - b.competing < hold;
  const mustBeShort = b.available + b.held < hold;
  if (answer.kind === 'error') {
    const allowed =
      // A transcription holds one minute first, then the rest once the media's length is known: either may be refused.
      (answer.code === 'INSUFFICIENT_CREDITS' &&
        (b.alone ? b.available < hold : mayBeShort) &&
        [1, hold].includes(answer.details?.required as number)) ||
      (answer.code === 'IDEMPOTENCY_KEY_IN_USE' && !!b.running) ||
      // A deadline is a legitimate end for any task on a busy machine; it must charge nothing.
      answer.code === 'PROVIDER_TIMEOUT' ||
      (answer.code === 'PROVIDER_ERROR' && op.kind === 'parseFail' && !(b.alone && b.available < hold));
    if (!allowed)
      fail(
        w,
        op,
        answer,
        `an error the model does not allow here (available ${b.available}, held ${b.held}, hold ${hold}, competing ${b.competing})`,
      );
    if (answer.code === 'INSUFFICIENT_CREDITS') {
      // The refusal's numbers: what the account had when it was refused (alone: exactly what it had before).
      const d = answer.details as { required: number; available: number };
      if (b.alone ? d.available !== b.available : !b.releases && d.available >= d.required)
        fail(w, op, answer, `402 details contradict the balance (available ${b.available} before)`);
    }
    op.state = 'failed';
    op.error = answer.code;
    return;
  }
  if (b.alone && b.available < hold) fail(w, op, answer, `accepted with ${b.available} available for a hold of ${hold}`);
  if (mustBeShort) fail(w, op, answer, 'accepted although the account could never cover it');
  if (answer.kind === 'accepted') {
    if (WAITED.has(op.kind)) fail(w, op, answer, 'a waited-for request answered 202');
    if (!(answer.held >= 1)) fail(w, op, answer, 'a queued job holds nothing');
    op.state = 'pending';
    op.jobId = answer.jobId;
    return;
  }
  // 200: a fresh success, or (the key's earlier job finished meanwhile) its replay.
  if (!WAITED.has(op.kind) || op.kind === 'parseFail') fail(w, op, answer, 'succeeded although it cannot');
  if (b.running && answer.jobId === b.running.jobId) {
    op.state = 'none';
    return;
  }
  if (answer.charged !== op.price) fail(w, op, answer, `charged ${answer.charged}, the price is ${op.price}`);
  if (b.alone && answer.balance !== b.available - op.price)
    fail(w, op, answer, `balance ${answer.balance}, expected ${b.available - op.price}`);
  acc.charged += op.price;
  Object.assign(op, { state: 'succeeded', jobId: answer.jobId, charged: answer.charged, balanceAfter: answer.balance });
  if (op.door === 'rest') op.restBody = answer.body;
}

/** Sends one op through its door, to its instance (the next in turn when it names none). */
export function send(w: World, op: Op, secret: string): Promise<Answer> {
  op.instance ??= w.nextInstance();
  if (!WAITED.has(op.kind)) return w.start(op.instance, op.door, secret, op.body.mediaUrl, op.requestId);
  return w.work(op.instance, op.door, op.kind === 'transcribe' ? 'transcribe' : 'parse', secret, op.body, op.idemKey, op.requestId);
}

/**
 * Sends ops at once and judges each answer. `armed`: the instances with a failpoint armed, which
 * may die under a request; one sent to any other must be answered.
 */
export async function sendAll(
  m: LedgerModel,
  w: World,
  batch: { acc: AccountModel; op: Op; key: KeyModel }[],
  armed: readonly number[],
): Promise<void> {
  for (const { acc, op } of batch) {
    acc.ops.push(op);
    op.instance ??= w.nextInstance();
  }
  const befores = await Promise.all(batch.map(({ acc, op, key }) => before(m, w, acc, op, key, armed.includes(op.instance!))));
  const answers = await Promise.all(batch.map(({ op, key }) => send(w, op, key.secret)));
  batch.forEach(({ acc, op }, i) => judge(m, w, acc, op, befores[i], answers[i]));
}

/**
 * A job row tells what became of an op whose answer was lost or whose job was open: its charge is
 * booked once, when the job is first seen finished.
 */
export function settle(acc: AccountModel, op: Op, job: JobRow | undefined, problems: string[]): void {
  if (!job) {
    op.state = 'none';
    return;
  }
  op.jobId = job.id;
  if (job.status === 'QUEUED' || job.status === 'RUNNING') {
    op.state = 'pending';
    return;
  }
  if (job.status === 'SUCCEEDED') {
    if (op.kind === 'endless' || op.kind === 'parseFail') problems.push(`job ${job.id} (${op.kind}) SUCCEEDED although it cannot`);
    if (job.credits_charged !== op.price)
      problems.push(`job ${job.id} (${op.kind}) charged ${job.credits_charged}, the price is ${op.price}`);
    acc.charged += job.credits_charged;
    Object.assign(op, { state: 'succeeded', charged: job.credits_charged, balanceAfter: job.balance_after });
    return;
  }
  if (job.credits_charged !== 0) problems.push(`job ${job.id} ended ${job.status} but charged ${job.credits_charged}`);
  op.state = 'failed';
  op.error = job.error_code;
}

/** The checks after every command: the ledger's invariants, then the model's balances. */
export async function verify(m: LedgerModel, w: World): Promise<void> {
  const problems = await checkInvariants(w, m);
  if (problems.length) throw new ModelViolation(`invariants broken:\n  ${problems.join('\n  ')}\n  gateway log:\n${w.lastLines(3000)}`);
}

/** Waits until every open job of the run is settled, or past its deadline plus a sweep (then the checks judge). */
export async function waitForSweep(m: LedgerModel, w: World): Promise<void> {
  const limit = Date.now() + (TIMING.transcribeTimeoutSeconds + TIMING.sweepIntervalSeconds + TIMING.sweepGraceSeconds) * 1000;
  while (Date.now() < limit) {
    await verify(m, w);
    if (m.accounts.every((a) => m.open(a).length === 0)) return;
    await sleep(200);
  }
}

/** After a run: every open job settles (released by the sweeper at the latest) and nothing stays held. */
export async function drain(m: LedgerModel, w: World): Promise<void> {
  await waitForSweep(m, w);
  await verify(m, w);
  const open = m.accounts.flatMap((a) => m.open(a));
  if (open.length)
    throw new ModelViolation(`jobs still open after their deadline and a sweep: ${open.map((o) => o.jobId ?? o.requestId).join(', ')}`);
}
