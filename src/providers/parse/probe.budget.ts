import type { MemoryLease } from '../../net/range-reader.js';

export interface ProbeBudgetLimits {
  /** Bytes all probes may hold at once. */
  maxBytes: number;
  /** Probes running at once. */
  maxProbes: number;
  /** Probes one account may have running at once. */
  maxPerAccount: number;
  /** ffprobe processes running at once. */
  maxFfprobes: number;
}

/** Why a probe was given up for want of budget: no slot, none left for its account, no bytes, no ffprobe. */
export type ProbeRefusal = 'probes' | 'account' | 'bytes' | 'ffprobe';

/** What the budget holds now, and the most bytes it ever held. */
export interface ProbeBudgetState {
  bytes: number;
  peakBytes: number;
  probes: number;
  ffprobes: number;
}

export interface ProbeBudgetObserver {
  /** Told after every change of what is held. */
  onChange?: (state: ProbeBudgetState) => void;
  /** Told of every probe given up, and why. */
  onRefused?: (why: ProbeRefusal) => void;
}

/**
 * What all media probes of the process may hold at once: bytes of fetched media, probes running
 * (in all and per account) and ffprobe processes. Nothing here waits: a probe asks and is given at
 * once or refused, and a refused probe is given up (its format's unknown fields stay null), so a
 * flood of hostile media costs the gateway the budget and no more, and never holds a parse back.
 */
export class ProbeBudget {
  private readonly state: ProbeBudgetState = { bytes: 0, peakBytes: 0, probes: 0, ffprobes: 0 };
  private readonly perAccount = new Map<string, number>();

  constructor(
    readonly limits: ProbeBudgetLimits,
    private readonly observer: ProbeBudgetObserver = {},
  ) {}

  /** A probe's lease for `account` (null: a probe nobody's account runs), or why there is none now. */
  start(account: string | null): ProbeLease | ProbeRefusal {
    if (this.state.probes >= this.limits.maxProbes) return this.refuse('probes');
    const mine = account === null ? 0 : (this.perAccount.get(account) ?? 0);
    if (account !== null && mine >= this.limits.maxPerAccount) return this.refuse('account');
    this.state.probes += 1;
    if (account !== null) this.perAccount.set(account, mine + 1);
    this.changed();
    return new ProbeLease(this, account);
  }

  /** What is held now. */
  snapshot(): ProbeBudgetState {
    return { ...this.state };
  }

  /** @internal For ProbeLease: `bytes` more, if they fit. */
  take(bytes: number): boolean {
    if (this.state.bytes + bytes > this.limits.maxBytes) return false;
    this.state.bytes += bytes;
    if (this.state.bytes > this.state.peakBytes) this.state.peakBytes = this.state.bytes;
    this.changed();
    return true;
  }

  /** @internal For ProbeLease. */
  give(bytes: number): void {
    this.state.bytes -= bytes;
    this.changed();
  }

  /** @internal For ProbeLease: an ffprobe process, if one may start. */
  takeFfprobe(): boolean {
    if (this.state.ffprobes >= this.limits.maxFfprobes) return false;
    this.state.ffprobes += 1;
    this.changed();
    return true;
  }

  /** @internal For ProbeLease. */
  giveFfprobe(): void {
    this.state.ffprobes -= 1;
    this.changed();
  }

  /** @internal For ProbeLease: the probe ended. */
  end(account: string | null): void {
    this.state.probes -= 1;
    if (account !== null) {
      const left = (this.perAccount.get(account) ?? 1) - 1;
      if (left > 0) this.perAccount.set(account, left);
      else this.perAccount.delete(account);
    }
    this.changed();
  }

  /** @internal Counts a refusal and hands its reason back. */
  refuse(why: ProbeRefusal): ProbeRefusal {
    this.observer.onRefused?.(why);
    return why;
  }

  private changed(): void {
    this.observer.onChange?.(this.snapshot());
  }
}

/**
 * One probe's share of the budget: its slot, the bytes it holds and its ffprobe process. Bytes are
 * taken before they are fetched and given back when dropped; `end` gives back whatever is left, so
 * a probe that fails half-way leaks nothing.
 */
export class ProbeLease implements MemoryLease {
  private held = 0;
  private ffprobe = false;
  private ended = false;

  constructor(
    private readonly budget: ProbeBudget,
    private readonly account: string | null,
  ) {}

  reserve(bytes: number): boolean {
    if (this.ended) return false;
    if (!this.budget.take(bytes)) {
      this.budget.refuse('bytes');
      return false;
    }
    this.held += bytes;
    return true;
  }

  free(bytes: number): void {
    const given = Math.min(bytes, this.held);
    if (given <= 0) return;
    this.held -= given;
    this.budget.give(given);
  }

  /** Whether this probe may start ffprobe now (at most one per probe; given back by `endFfprobe` or `end`). */
  startFfprobe(): boolean {
    if (this.ended || this.ffprobe) return false;
    if (!this.budget.takeFfprobe()) {
      this.budget.refuse('ffprobe');
      return false;
    }
    this.ffprobe = true;
    return true;
  }

  endFfprobe(): void {
    if (!this.ffprobe) return;
    this.ffprobe = false;
    this.budget.giveFfprobe();
  }

  /** Bytes this probe holds now. */
  get bytes(): number {
    return this.held;
  }

  end(): void {
    if (this.ended) return;
    this.free(this.held);
    this.endFfprobe();
    this.ended = true;
    this.budget.end(this.account);
  }
}
