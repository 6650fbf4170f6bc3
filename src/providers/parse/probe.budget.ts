import { BudgetBooks, LeasedBytes } from '../../net/budget-books.js';
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
  private readonly books: BudgetBooks<'probes' | 'ffprobes'>;
  private readonly perAccount = new Map<string, number>();

  constructor(
    readonly limits: ProbeBudgetLimits,
    private readonly observer: ProbeBudgetObserver = {},
  ) {
    this.books = new BudgetBooks(limits.maxBytes, { probes: limits.maxProbes, ffprobes: limits.maxFfprobes });
  }

  /** A probe's lease for `account` (null: a probe nobody's account runs), or why there is none now. */
  start(account: string | null): ProbeLease | ProbeRefusal {
    if (!this.books.fits(0, 'probes')) return this.refuse('probes');
    const mine = account === null ? 0 : (this.perAccount.get(account) ?? 0);
    if (account !== null && mine >= this.limits.maxPerAccount) return this.refuse('account');
    this.books.take(0, 'probes');
    if (account !== null) this.perAccount.set(account, mine + 1);
    this.changed();
    return new ProbeLease(this, account);
  }

  /** What is held now. */
  snapshot(): ProbeBudgetState {
    const { bytes, peakBytes } = this.books;
    return { bytes, peakBytes, probes: this.books.taken('probes'), ffprobes: this.books.taken('ffprobes') };
  }

  /** @internal For ProbeLease: `bytes` more, if they fit. */
  take(bytes: number): boolean {
    if (!this.books.fits(bytes)) return false;
    this.books.take(bytes);
    this.changed();
    return true;
  }

  /** @internal For ProbeLease. */
  give(bytes: number): void {
    this.books.give(bytes);
    this.changed();
  }

  /** @internal For ProbeLease: an ffprobe process, if one may start. */
  takeFfprobe(): boolean {
    if (!this.books.fits(0, 'ffprobes')) return false;
    this.books.take(0, 'ffprobes');
    this.changed();
    return true;
  }

  /** @internal For ProbeLease. */
  giveFfprobe(): void {
    this.books.give(0, 'ffprobes');
    this.changed();
  }

  /** @internal For ProbeLease: the probe ended. */
  end(account: string | null): void {
    this.books.give(0, 'probes');
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
  private readonly held = new LeasedBytes();
  private ffprobe = false;

  constructor(
    private readonly budget: ProbeBudget,
    private readonly account: string | null,
  ) {}

  reserve(bytes: number): boolean {
    if (this.held.ended) return false;
    if (!this.budget.take(bytes)) {
      this.budget.refuse('bytes');
      return false;
    }
    this.held.add(bytes);
    return true;
  }

  free(bytes: number): void {
    const given = this.held.release(bytes);
    if (given) this.budget.give(given);
  }

  /** Whether this probe may start ffprobe now (at most one per probe; given back by `endFfprobe` or `end`). */
  startFfprobe(): boolean {
    if (this.held.ended || this.ffprobe) return false;
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
    return this.held.bytes;
  }

  end(): void {
    const held = this.held.end();
    if (held === null) return;
    if (held) this.budget.give(held);
    this.endFfprobe();
    this.budget.end(this.account);
  }
}
