import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type fc from 'fast-check';
import { MEDIA, TIMING, sleep, type Answer, type Door, type World } from './ledger-world.js';
import { checkInvariants, type JobRow } from './ledger-invariants.js';

/** Every failpoint the gateway has (src/failpoints.ts callers), in the order of a task's life. */
export const FAILPOINTS = [
  'task.afterReplayLookup',
  'task.afterHold',
  'queue.afterHold',
  'worker.afterMarkRunning',
  'transcribe.afterExtendHold',
  'task.afterWork',
  'task.afterCapture',
  'job.beforeCancel',
  'job.afterCancel',
  'sweep.before',
  'sweep.after',
] as const;
export type Failpoint = (typeof FAILPOINTS)[number];

/**
 * What a request asks for: a parse that succeeds or fails (its page answers 500), a transcription
 * waited for (priced by the media's length), a queued one (worked in the background), or a queued
 * one of media that never finishes downloading (it can only be canceled or swept).
 */
export type OpKind = 'parseOk' | 'parseFail' | 'transcribe' | 'queued' | 'endless';
const WAITED: ReadonlySet<OpKind> = new Set(['parseOk', 'parseFail', 'transcribe']);

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
  // A failed run may have left the gateway dead or armed; each run starts from a live, unarmed one.
  if (!world.gateway.alive) await world.restart();
  if (!(await world.gateway.arm(''))) await world.restart();
  const runId = `r${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const accounts: AccountModel[] = [];
  for (const [i, credits] of INITIAL_CREDITS.entries()) {
    const acc = await world.operator.accounts.create({ name: `model ${runId} ${i}`, credits, membershipDays: 30 });
    const keys: KeyModel[] = [];
    for (const name of ['first', 'second']) {
      const created = await world.operator.apiKeys.create(acc.id, name);
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

const specText = (s: WorkSpec) => `${s.kind}${s.kind === 'transcribe' || s.kind === 'queued' ? `(m${s.media})` : ''}@a${s.account}k${s.key}/${s.door}${s.keyed ? '/keyed' : ''}${s.kind === 'replay' ? `#${s.target}` : ''}`;

/** Turns a spec into an op of the model's state now; a replay with nothing to replay is a keyed parse. */
function materialize(m: LedgerModel, w: World, spec: WorkSpec, accountIndex = spec.account % m.accounts.length): { acc: AccountModel; op: Op; key: KeyModel } {
  const acc = m.accounts[accountIndex];
  const key = acc.keys[spec.key % acc.keys.length];
  const requestId = w.nextRequestId();
  if (spec.kind === 'replay') {
    const targets = acc.ops.filter((o) => o.idemKey && WAITED.has(o.kind));
    if (targets.length) {
      const t = targets[spec.target % targets.length];
      return { acc, key, op: { kind: t.kind, price: t.price, door: spec.door, body: t.body, idemKey: t.idemKey, requestId, state: 'sent' } };
    }
  }
  const kind: OpKind = spec.kind === 'replay' ? 'parseOk' : spec.kind;
  const media = MEDIA[spec.media % MEDIA.length];
  const site = w.site.origin;
  const body: Record<string, string> =
    kind === 'parseOk' ? { url: `${site}/ok` } : kind === 'parseFail' ? { url: `${site}/broken` } : kind === 'endless' ? { mediaUrl: `${site}/endless.mp3` } : { mediaUrl: site + media.path };
  const price = kind === 'transcribe' || kind === 'queued' ? media.price : 1;
  const keyed = WAITED.has(kind) && (spec.keyed || spec.kind === 'replay');
  return { acc, key, op: { kind, price, door: spec.door, body, idemKey: keyed ? m.freshIdempotencyKey() : null, requestId, state: 'sent' } };
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
  const { rows } = await w.sql.query<{ available: string; held: string }>(`select available, held from credit_balance where account_id = $1`, [accountId]);
  return { available: Number(rows[0]?.available ?? 0), held: Number(rows[0]?.held ?? 0) };
}

async function before(m: LedgerModel, w: World, acc: AccountModel, op: Op, key: KeyModel, crashArmed: boolean): Promise<Before> {
  const bal = await balanceOf(w, acc.id);
  const sameKey = op.idemKey ? acc.ops.filter((o) => o !== op && o.idemKey === op.idemKey) : [];
  return {
    keyLive: !key.revoked,
    member: acc.member,
    ...bal,
    // Sent ops of the batch are open too (pushed before any is sent).
    competing: m.open(acc).filter((o) => o !== op).reduce((s, o) => s + o.price, 0),
    alone: m.open(acc).filter((o) => o !== op).length === 0,
    releases: m.open(acc).some((o) => o !== op && o.kind !== 'parseOk'),
    crashArmed,
    prior: sameKey.find((o) => o.state === 'succeeded'),
    running: sameKey.find((o) => o.state === 'pending'),
  };
}

class ModelViolation extends Error {}

function fail(w: World, op: Op, answer: Answer, why: string): never {
  throw new ModelViolation(`${why}\n  request: ${op.kind} ${op.door} ${JSON.stringify(op.body)} key=${op.idemKey} id=${op.requestId}\n  answer: ${JSON.stringify(answer).slice(0, 600)}\n  gateway log:\n${w.gateway.lastLines().slice(-3000)}`);
}

/**
 * Judges one answer against what the model allows, and books its effect: a fresh success charges
 * exactly the price, a replay charges nothing and repeats the stored answer, everything else
 * charges nothing. Where requests overlap the model allows each outcome the overlap could explain
 * and lets the ledger checks (exact sums) decide whether it was paid for correctly.
 */
function judge(m: LedgerModel, w: World, acc: AccountModel, op: Op, b: Before, answer: Answer): void {
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
  if (!b.keyLive) return expectError('UNAUTHENTICATED');
  if (!b.member) return expectError('MEMBERSHIP_REQUIRED');
  if (b.prior) {
    const p = b.prior;
    if (answer.kind !== 'ok' || answer.jobId !== p.jobId || answer.charged !== p.charged || answer.balance !== p.balanceAfter) {
      fail(w, op, answer, `expected the replay of job ${p.jobId} (charged ${p.charged}, balance ${p.balanceAfter})`);
    }
    if (op.door === 'rest' && p.restBody && !isDeepStrictEqual(answer.body, p.restBody)) fail(w, op, answer, 'a REST replay must repeat the first answer exactly');
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
      (answer.code === 'INSUFFICIENT_CREDITS' && (b.alone ? b.available < hold : mayBeShort) && [1, hold].includes(answer.details?.required as number)) ||
      (answer.code === 'IDEMPOTENCY_KEY_IN_USE' && !!b.running) ||
      // A deadline is a legitimate end for any task on a busy machine; it must charge nothing.
      answer.code === 'PROVIDER_TIMEOUT' ||
      (answer.code === 'PROVIDER_ERROR' && op.kind === 'parseFail' && !(b.alone && b.available < hold));
    if (!allowed) fail(w, op, answer, `an error the model does not allow here (available ${b.available}, held ${b.held}, hold ${hold}, competing ${b.competing})`);
    if (answer.code === 'INSUFFICIENT_CREDITS') {
      // The refusal's numbers: what the account had when it was refused (alone: exactly what it had before).
      const d = answer.details as { required: number; available: number };
      if (b.alone ? d.available !== b.available : !b.releases && d.available >= d.required) fail(w, op, answer, `402 details contradict the balance (available ${b.available} before)`);
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
  if (b.alone && answer.balance !== b.available - op.price) fail(w, op, answer, `balance ${answer.balance}, expected ${b.available - op.price}`);
  acc.charged += op.price;
  Object.assign(op, { state: 'succeeded', jobId: answer.jobId, charged: answer.charged, balanceAfter: answer.balance });
  if (op.door === 'rest') op.restBody = answer.body;
}

/** Sends one op through its door. */
function send(w: World, op: Op, secret: string): Promise<Answer> {
  if (!WAITED.has(op.kind)) return w.start(op.door, secret, op.body.mediaUrl, op.requestId);
  return w.work(op.door, op.kind === 'transcribe' ? 'transcribe' : 'parse', secret, op.body, op.idemKey, op.requestId);
}

/** Sends ops at once and judges each answer. */
async function sendAll(m: LedgerModel, w: World, batch: { acc: AccountModel; op: Op; key: KeyModel }[], crashArmed: boolean): Promise<void> {
  for (const { acc, op } of batch) acc.ops.push(op);
  const befores = await Promise.all(batch.map(({ acc, op, key }) => before(m, w, acc, op, key, crashArmed)));
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
    if (job.credits_charged !== op.price) problems.push(`job ${job.id} (${op.kind}) charged ${job.credits_charged}, the price is ${op.price}`);
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
  if (problems.length) throw new ModelViolation(`invariants broken:\n  ${problems.join('\n  ')}\n  gateway log:\n${w.gateway.lastLines().slice(-3000)}`);
}

/** Waits until every open job of the run is settled, or past its deadline plus a sweep (then the checks judge). */
async function waitForSweep(m: LedgerModel, w: World): Promise<void> {
  const limit = Date.now() + (TIMING.transcribeTimeoutSeconds + TIMING.sweepIntervalSeconds + TIMING.sweepGraceSeconds) * 1000;
  while (Date.now() < limit) {
    await verify(m, w);
    if (m.accounts.every((a) => m.open(a).length === 0)) return;
    await sleep(200);
  }
}

type Cmd = fc.AsyncCommand<LedgerModel, World, false>;

abstract class Base implements Cmd {
  abstract readonly name: string;
  check(_m: Readonly<LedgerModel>): boolean {
    return true;
  }
  async run(m: LedgerModel, w: World): Promise<void> {
    w.count(w.stats.commands, this.name);
    await this.act(m, w);
    await verify(m, w);
  }
  protected abstract act(m: LedgerModel, w: World): Promise<void>;
  abstract toString(): string;
}

/** An operator grants credits (the `mediagate credits grant` path: the ledger's GRANT statement). */
export class Grant extends Base {
  readonly name = 'grant';
  constructor(
    readonly account: number,
    readonly amount: number,
  ) {
    super();
  }
  protected async act(m: LedgerModel, w: World) {
    const acc = m.accounts[this.account % m.accounts.length];
    await w.operator.ledger.grant(acc.id, this.amount, 'model test');
    acc.granted += this.amount;
  }
  toString() {
    return `Grant(a${this.account}, ${this.amount})`;
  }
}

/** One request, alone. */
export class Work extends Base {
  readonly name = 'work';
  constructor(readonly spec: WorkSpec) {
    super();
  }
  protected async act(m: LedgerModel, w: World) {
    await sendAll(m, w, [materialize(m, w, this.spec)], false);
  }
  toString() {
    return `Work(${specText(this.spec)})`;
  }
}

/** Several requests at the same time, on the same or different accounts. */
export class Burst extends Base {
  readonly name = 'burst';
  constructor(readonly specs: WorkSpec[]) {
    super();
  }
  protected async act(m: LedgerModel, w: World) {
    const batch = this.specs.map((s) => materialize(m, w, s));
    // Twins (one key sent twice at once) are the idempotency suite's subject; here keys differ.
    const seen = new Set<string>();
    for (const x of batch) {
      if (x.op.idemKey && seen.has(x.op.idemKey)) x.op.idemKey = m.freshIdempotencyKey();
      if (x.op.idemKey) seen.add(x.op.idemKey);
    }
    await sendAll(m, w, batch, false);
  }
  toString() {
    return `Burst(${this.specs.map(specText).join(', ')})`;
  }
}

/** Queues a transcription of endless media and cancels it (while queued, or once it runs). */
export class Cancel extends Base {
  readonly name = 'cancel';
  constructor(
    readonly account: number,
    readonly key: number,
    readonly door: Door,
    readonly waitRunning: boolean,
  ) {
    super();
  }
  protected async act(m: LedgerModel, w: World) {
    const x = materialize(m, w, { kind: 'endless', media: 0, account: this.account, key: this.key, door: this.door, keyed: false, target: 0 });
    await sendAll(m, w, [x], false);
    if (x.op.state !== 'pending') return;
    await cancelJob(w, x.op, x.key, this.waitRunning, false);
  }
  toString() {
    return `Cancel(a${this.account}k${this.key}/${this.door}${this.waitRunning ? '/running' : ''})`;
  }
}

async function cancelJob(w: World, op: Op, key: KeyModel, waitRunning: boolean, crashArmed: boolean): Promise<void> {
  if (waitRunning) {
    for (let i = 0; i < 60; i++) {
      const job = await w.job(key.secret, op.jobId!);
      if (!job || job.status !== 'QUEUED') break;
      await sleep(50);
    }
  }
  const res = await w.gql(key.secret, `mutation($id: ID!) { cancelJob(id: $id) { status creditsHeld creditsCharged } }`, { id: op.jobId });
  if ('lost' in res) {
    if (!crashArmed) throw new ModelViolation(`cancelJob got no answer although no failpoint was armed:\n${w.gateway.lastLines()}`);
    return;
  }
  const job = res.data?.cancelJob;
  if (res.code || !job || job.status !== 'CANCELED' || job.creditsHeld !== 0 || job.creditsCharged !== 0) {
    throw new ModelViolation(`cancelJob of an open job answered ${JSON.stringify(res)}`);
  }
  op.state = 'failed';
}

/** Revokes a key through GraphQL (with a live key of the account), or as the operator when none is left. */
export class Revoke extends Base {
  readonly name = 'revoke';
  constructor(
    readonly account: number,
    readonly key: number,
  ) {
    super();
  }
  override check(m: Readonly<LedgerModel>) {
    return m.accounts[this.account % m.accounts.length].keys.some((k) => !k.revoked);
  }
  protected async act(m: LedgerModel, w: World) {
    const acc = m.accounts[this.account % m.accounts.length];
    const target = m.liveKey(acc, this.key)!;
    const caller = m.liveKey(acc, this.key + 1)!;
    const res = await w.gql(caller.secret, `mutation($id: ID!) { revokeApiKey(id: $id) { id revokedAt } }`, { id: target.id });
    if ('lost' in res || res.code || res.data.revokeApiKey.id !== target.id || !res.data.revokeApiKey.revokedAt) {
      throw new ModelViolation(`revokeApiKey answered ${JSON.stringify(res)}`);
    }
    target.revoked = true;
  }
  toString() {
    return `Revoke(a${this.account}k${this.key})`;
  }
}

/** A new key: through GraphQL with a live key, or from the operator when the account has none. */
export class NewKey extends Base {
  readonly name = 'newKey';
  constructor(readonly account: number) {
    super();
  }
  override check(m: Readonly<LedgerModel>) {
    return m.accounts[this.account % m.accounts.length].keys.length < 6;
  }
  protected async act(m: LedgerModel, w: World) {
    const acc = m.accounts[this.account % m.accounts.length];
    const caller = m.liveKey(acc);
    if (!caller) {
      const created = await w.operator.apiKeys.create(acc.id, 'operator');
      acc.keys.push({ id: created.apiKey.id, secret: created.key, revoked: false });
      return;
    }
    const res = await w.gql(caller.secret, `mutation { createApiKey(name: "model") { key apiKey { id } } }`, {});
    if ('lost' in res || res.code) throw new ModelViolation(`createApiKey answered ${JSON.stringify(res)}`);
    acc.keys.push({ id: res.data.createApiKey.apiKey.id, secret: res.data.createApiKey.key, revoked: false });
  }
  toString() {
    return `NewKey(a${this.account})`;
  }
}

/** The membership's paid period ends (or, renewed, starts again): an operator's or the calendar's doing. */
export class Membership extends Base {
  readonly name: string;
  constructor(
    readonly account: number,
    readonly active: boolean,
  ) {
    super();
    this.name = active ? 'renew' : 'lapse';
  }
  override check(m: Readonly<LedgerModel>) {
    return m.accounts[this.account % m.accounts.length].member !== this.active;
  }
  protected async act(m: LedgerModel, w: World) {
    const acc = m.accounts[this.account % m.accounts.length];
    await w.operator.accounts.setMembership(acc.id, new Date(Date.now() + (this.active ? 30 * 86_400_000 : -1000)));
    acc.member = this.active;
  }
  toString() {
    return `${this.active ? 'Renew' : 'Lapse'}(a${this.account})`;
  }
}

/**
 * A sweep from another instance (the test process's own services), racing the gateway's sweeper,
 * then a wait for the gateway's: every open job of the run settles by its deadline plus one interval.
 */
export class Sweep extends Base {
  readonly name = 'sweep';
  protected async act(m: LedgerModel, w: World) {
    await w.operator.jobControl.sweep();
    await waitForSweep(m, w);
  }
  toString() {
    return 'Sweep()';
  }
}

/** What must run for a failpoint to be hit: 0 a parse, 1 a waited-for transcription, 2 a queued one. */
function triggerOf(fp: Failpoint, variant: number): 'parse' | 'transcribe' | 'queued' | 'cancel' | null {
  if (fp.startsWith('sweep.')) return null;
  if (fp.startsWith('job.')) return 'cancel';
  if (fp === 'queue.afterHold' || fp === 'worker.afterMarkRunning') return 'queued';
  if (fp === 'transcribe.afterExtendHold') return variant === 2 ? 'queued' : 'transcribe';
  if (variant === 2) return fp === 'task.afterWork' || fp === 'task.afterCapture' ? 'queued' : 'parse';
  return variant === 1 ? 'transcribe' : 'parse';
}

/**
 * Crashes the gateway at a failpoint: arms it (crash at its first hit), sends a request that passes
 * there (plus other requests on other accounts at the same time), waits for the SIGKILL, starts a
 * new gateway on the same database, then looks up what became of every request whose answer was
 * lost, and replays the keyed ones that succeeded.
 */
export class Crash extends Base {
  readonly name = 'crash';
  constructor(
    readonly failpoint: Failpoint,
    readonly account: number,
    readonly door: Door,
    readonly variant: number,
    readonly extras: WorkSpec[],
  ) {
    super();
  }

  private triggerAccount(m: Readonly<LedgerModel>): number | null {
    const kind = triggerOf(this.failpoint, this.variant);
    if (!kind) return this.account % m.accounts.length;
    const need = kind === 'transcribe' || kind === 'queued' ? MEDIA[1].price : 1;
    for (let i = 0; i < m.accounts.length; i++) {
      const idx = (this.account + i) % m.accounts.length;
      const acc = m.accounts[idx];
      if (acc.member && acc.keys.some((k) => !k.revoked) && (m as LedgerModel).spendable(acc) >= need) return idx;
    }
    return null;
  }

  override check(m: Readonly<LedgerModel>) {
    return this.triggerAccount(m) !== null;
  }

  protected async act(m: LedgerModel, w: World) {
    const gateway = w.gateway;
    const t = this.triggerAccount(m)!;
    const kind = triggerOf(this.failpoint, this.variant);
    if (!(await gateway.arm(`${this.failpoint}=crash@1`))) throw new ModelViolation(`could not arm ${this.failpoint}: the gateway is gone\n${gateway.lastLines()}`);
    let trigger: { acc: AccountModel; op: Op; key: KeyModel } | null = null;
    const liveKeyIndex = (acc: AccountModel) => acc.keys.findIndex((k) => !k.revoked);
    if (kind) {
      const acc = m.accounts[t];
      const spec: WorkSpec = {
        kind: kind === 'parse' ? 'parseOk' : kind === 'cancel' ? 'endless' : kind,
        media: 1,
        account: t,
        key: liveKeyIndex(acc),
        door: this.door,
        keyed: this.failpoint === 'task.afterReplayLookup' || this.variant === 0,
        target: 0,
      };
      trigger = materialize(m, w, spec, t);
    }
    // The others go to the other accounts, so that they cannot take the trigger's credits.
    const extras = this.extras.map((s) => materialize(m, w, s, kind ? (t + 1 + (s.account % (m.accounts.length - 1))) % m.accounts.length : s.account % m.accounts.length));
    const work = sendAll(m, w, [...(trigger ? [trigger] : []), ...extras], true).then(async () => {
      if (kind === 'cancel' && trigger?.op.state === 'pending') await cancelJob(w, trigger.op, trigger.key, this.variant === 1, true);
    });
    await work;
    const background = kind === 'queued' || !kind;
    let exit = await gateway.waitExit(background ? (TIMING.transcribeTimeoutSeconds + 3) * 1000 : 3000);
    if (!exit && !(await gateway.arm(''))) exit = await gateway.exited;
    if (!exit) {
      // Not reached: acceptable only when the trigger ended early for a reason the contract allows.
      await verify(m, w);
      const op = trigger?.op;
      const timedOut = op && op.state === 'failed' && op.error === 'PROVIDER_TIMEOUT';
      if (!timedOut) throw new ModelViolation(`failpoint ${this.failpoint} was never reached (trigger ${op ? `${op.kind} ${op.state}` : 'none'})\n${gateway.lastLines()}`);
      w.count(w.stats.outcomes, 'failpoint-not-reached');
      return;
    }
    if (exit.signal !== 'SIGKILL' || exit.failpoint !== this.failpoint) {
      throw new ModelViolation(`the gateway ended ${JSON.stringify(exit)}, not by the failpoint ${this.failpoint}\n${gateway.lastLines()}`);
    }
    w.count(w.stats.crashes, this.failpoint);
    await w.restart();
    await this.settleLost(m, w);
  }

  /** What became of the requests the crash cut off, and the replay of those that were charged. */
  private async settleLost(m: LedgerModel, w: World) {
    const lost = m.accounts.flatMap((acc) => acc.ops.filter((o) => o.state === 'lost').map((op) => ({ acc, op })));
    if (!lost.length) return;
    const { rows } = await w.sql.query<JobRow>(
      `select id, account_id, status, hold_amount::int, credits_charged::int, balance_after::int, request_id, error_code from job where request_id = any($1)`,
      [lost.map((l) => l.op.requestId)],
    );
    const problems: string[] = [];
    for (const { acc, op } of lost) {
      const jobs = rows.filter((r) => r.request_id === op.requestId);
      if (jobs.length > 1) problems.push(`request ${op.requestId} opened ${jobs.length} jobs`);
      settle(acc, op, jobs[0], problems);
    }
    if (problems.length) throw new ModelViolation(problems.join('\n'));
    // Charged before the crash: the same key now replays the stored result and charges nothing more.
    for (const { acc, op } of lost) {
      if (op.state !== 'succeeded' || !op.idemKey) continue;
      const key = m.liveKey(acc);
      if (!key || !acc.member) continue;
      const replay: Op = { ...op, requestId: w.nextRequestId(), state: 'sent', restBody: undefined };
      acc.ops.push(replay);
      const b = await before(m, w, acc, replay, key, false);
      judge(m, w, acc, replay, b, await send(w, replay, key.secret));
    }
  }

  toString() {
    return `Crash(${this.failpoint}, a${this.account}/${this.door}/v${this.variant}${this.extras.length ? `, [${this.extras.map(specText).join(', ')}]` : ''})`;
  }
}

/** After a run: every open job settles (released by the sweeper at the latest) and nothing stays held. */
export async function drain(m: LedgerModel, w: World): Promise<void> {
  await waitForSweep(m, w);
  await verify(m, w);
  const open = m.accounts.flatMap((a) => m.open(a));
  if (open.length) throw new ModelViolation(`jobs still open after their deadline and a sweep: ${open.map((o) => o.jobId ?? o.requestId).join(', ')}`);
}
