import type fc from 'fast-check';
import { MEDIA, TIMING, sleep, type Door, type World } from './ledger-world.js';
import {
  ModelViolation,
  before,
  judge,
  materialize,
  send,
  sendAll,
  settle,
  specText,
  verify,
  waitForSweep,
  type AccountModel,
  type KeyModel,
  type LedgerModel,
  type Op,
  type WorkSpec,
} from './ledger-model.js';
import type { JobRow } from './ledger-invariants.js';
import { OPERATOR } from '../../src/modules/principal.js';

/**
 * The commands of the model test: what a client, an operator, the calendar or a crash does. Each
 * acts through the doors (or the operator's own code), books what it saw in the model, and ends
 * with the checks of every invariant.
 */

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
    await sendAll(m, w, [materialize(m, w, this.spec)], []);
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
    await sendAll(m, w, batch, []);
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
    const x = materialize(m, w, {
      kind: 'endless',
      media: 0,
      account: this.account,
      key: this.key,
      door: this.door,
      keyed: false,
      target: 0,
    });
    await sendAll(m, w, [x], []);
    if (x.op.state !== 'pending') return;
    await cancelJob(w, x.op, x.key, this.waitRunning, null);
  }
  toString() {
    return `Cancel(a${this.account}k${this.key}/${this.door}${this.waitRunning ? '/running' : ''})`;
  }
}

/**
 * Cancels an op's job (once it runs, with `waitRunning`). `armed`: the instance with an armed
 * failpoint to send the cancel to, which may die under it; null: the next instance in turn, which
 * must answer.
 */
async function cancelJob(w: World, op: Op, key: KeyModel, waitRunning: boolean, armed: number | null): Promise<void> {
  if (waitRunning) {
    for (let i = 0; i < 60; i++) {
      const job = await w.job(key.secret, op.jobId!);
      if (job?.status !== 'QUEUED') break;
      await sleep(50);
    }
  }
  const res = await w.gql<{ cancelJob: { status: string; creditsHeld: number; creditsCharged: number } | null }>(
    key.secret,
    `mutation($id: ID!) { cancelJob(id: $id) { status creditsHeld creditsCharged } }`,
    { id: op.jobId },
    undefined,
    armed ?? undefined,
  );
  if ('lost' in res) {
    if (armed === null) throw new ModelViolation(`cancelJob got no answer although no failpoint was armed:\n${w.lastLines()}`);
    return;
  }
  const job = res.data?.cancelJob;
  if (res.code || !job || job.status !== 'CANCELED' || job.creditsHeld !== 0 || job.creditsCharged !== 0) {
    throw new ModelViolation(`cancelJob of an open job answered ${JSON.stringify(res)}\n  gateway log:\n${w.lastLines(3000)}`);
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
    const res = await w.gql<{ revokeApiKey: { id: string; revokedAt: string | null } }>(
      caller.secret,
      `mutation($id: ID!) { revokeApiKey(id: $id) { id revokedAt } }`,
      { id: target.id },
    );
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
      const created = await w.operator.apiKeys.create(OPERATOR, acc.id, 'operator');
      acc.keys.push({ id: created.apiKey.id, secret: created.key, revoked: false });
      return;
    }
    const res = await w.gql<{ createApiKey: { key: string; apiKey: { id: string } } }>(
      caller.secret,
      `mutation { createApiKey(name: "model") { key apiKey { id } } }`,
      {},
    );
    if ('lost' in res || res.code) throw new ModelViolation(`createApiKey answered ${JSON.stringify(res)}`);
    acc.keys.push({ id: res.data.createApiKey.apiKey.id, secret: res.data.createApiKey.key, revoked: false });
  }
  toString() {
    return `NewKey(a${this.account})`;
  }
}

/**
 * The membership's paid period ends (or, renewed, starts again): an operator's or the calendar's
 * doing, on the first account from `account` on whose membership is not already so.
 */
export class Membership extends Base {
  readonly name: string;
  constructor(
    readonly account: number,
    readonly active: boolean,
  ) {
    super();
    this.name = active ? 'renew' : 'lapse';
  }
  private target(m: Readonly<LedgerModel>): AccountModel | undefined {
    const n = m.accounts.length;
    return Array.from({ length: n }, (_, i) => m.accounts[(this.account + i) % n]).find((a) => a.member !== this.active);
  }
  override check(m: Readonly<LedgerModel>) {
    return this.target(m) !== undefined;
  }
  protected async act(m: LedgerModel, w: World) {
    const acc = this.target(m)!;
    await w.operator.accounts.setMembership(OPERATOR, acc.id, new Date(Date.now() + (this.active ? 30 * 86_400_000 : -1000)));
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
    await w.operator.jobs.sweep();
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
 * Crashes a gateway at a failpoint: arms it (crash at its first hit) on one instance (each in
 * turn), sends that instance a request that passes there (plus other requests on other accounts at
 * the same time, to the other instances when there are several, which must answer them all through
 * the crash), waits for the SIGKILL, starts a new gateway in place of the dead one on the same
 * database, then looks up what became of every request whose answer was lost, and replays the
 * keyed ones that succeeded (on a survivor when there is one).
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
    const t = this.triggerAccount(m)!;
    const kind = triggerOf(this.failpoint, this.variant);
    const all = Array.from({ length: w.instances }, (_, i) => i);
    const victim = w.nextVictim();
    const others = all.filter((i) => i !== victim);
    // A queued job is worked by whichever instance's worker claims it first (pg-boss), not by the
    // one that accepted it: a failpoint in the worker is armed on every instance, and kills the one
    // that works the job (or any that gets there first, as with one instance).
    const armed = kind === 'queued' && this.failpoint !== 'queue.afterHold' ? all : [victim];
    for (const i of armed) {
      if (!(await w.gateways[i].arm(`${this.failpoint}=crash@1`)))
        throw new ModelViolation(`could not arm ${this.failpoint}: instance ${i} is gone\n${w.gateways[i].lastLines()}`);
    }
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
      trigger.op.instance = victim;
    }
    // The others go to the other accounts, so that they cannot take the trigger's credits.
    const extras = this.extras.map((s, j) => {
      const x = materialize(
        m,
        w,
        s,
        kind ? (t + 1 + (s.account % (m.accounts.length - 1))) % m.accounts.length : s.account % m.accounts.length,
      );
      x.op.instance = others.length ? others[j % others.length] : victim;
      return x;
    });
    await sendAll(m, w, [...(trigger ? [trigger] : []), ...extras], armed);
    if (kind === 'cancel' && trigger?.op.state === 'pending') await cancelJob(w, trigger.op, trigger.key, this.variant === 1, victim);
    const background = kind === 'queued' || !kind;
    await w.anyExit(armed, background ? (TIMING.transcribeTimeoutSeconds + 3) * 1000 : 3000);
    // Disarmed together, at once: an instance that dies before it hears crashed at the failpoint too.
    const disarmed = await Promise.all(armed.map((i) => w.gateways[i].arm('')));
    const dead = armed.filter((_, k) => !disarmed[k]);
    if (!dead.length) {
      // Not reached: acceptable only when the trigger ended early for a reason the contract allows.
      await verify(m, w);
      const op = trigger?.op;
      const timedOut = op && op.state === 'failed' && op.error === 'PROVIDER_TIMEOUT';
      if (!timedOut)
        throw new ModelViolation(
          `failpoint ${this.failpoint} was never reached (trigger ${op ? `${op.kind} ${op.state}` : 'none'})\n${w.lastLines()}`,
        );
      w.count(w.stats.outcomes, 'failpoint-not-reached');
      return;
    }
    for (const i of dead) {
      const exit = await w.gateways[i].exited;
      if (exit.signal !== 'SIGKILL' || exit.failpoint !== this.failpoint) {
        throw new ModelViolation(
          `instance ${i} ended ${JSON.stringify(exit)}, not by the failpoint ${this.failpoint}\n${w.gateways[i].lastLines()}`,
        );
      }
    }
    const gone = all.find((i) => !armed.includes(i) && !w.gateways[i].alive);
    if (gone !== undefined)
      throw new ModelViolation(`instance ${gone} died although no failpoint was armed on it\n${w.gateways[gone].lastLines()}`);
    for (const i of dead) {
      w.count(w.stats.crashes, this.failpoint);
      w.stats.instances[i].crashes += 1;
      await w.restart(i);
    }
    await this.settleLost(
      m,
      w,
      all.filter((i) => !dead.includes(i)),
    );
  }

  /** What became of the requests the crash cut off, and the replay of those that were charged (on a survivor, if any). */
  private async settleLost(m: LedgerModel, w: World, survivors: number[]) {
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
      const replay: Op = { ...op, requestId: w.nextRequestId(), state: 'sent', restBody: undefined, instance: survivors[0] };
      acc.ops.push(replay);
      const b = await before(m, w, acc, replay, key, false);
      judge(m, w, acc, replay, b, await send(w, replay, key.secret));
    }
  }

  toString() {
    return `Crash(${this.failpoint}, a${this.account}/${this.door}/v${this.variant}${this.extras.length ? `, [${this.extras.map(specText).join(', ')}]` : ''})`;
  }
}
