/**
 * The bookkeeping of a process-wide budget: bytes held against a limit (and the most ever held), and
 * slots of each kind (downloads, probes, ffprobe processes) against theirs. It only counts: whether
 * a caller waits or is refused, and who is told of a change, is the budget's that keeps these books
 * (the probe budget's in providers/parse/, the temporary disk's in modules/transcription/).
 */
export class BudgetBooks<Slot extends string> {
  private held = 0;
  private peak = 0;
  private readonly slots = new Map<Slot, number>();

  constructor(
    private readonly maxBytes: number,
    private readonly maxSlots: Readonly<Record<Slot, number>>,
  ) {}

  get bytes(): number {
    return this.held;
  }

  /** The most bytes held at once so far. */
  get peakBytes(): number {
    return this.peak;
  }

  /** Slots of `kind` held now. */
  taken(kind: Slot): number {
    return this.slots.get(kind) ?? 0;
  }

  /** Whether `bytes` more fit, and a slot of `kind` too when one is named. */
  fits(bytes: number, kind?: Slot): boolean {
    return this.held + bytes <= this.maxBytes && (kind === undefined || this.taken(kind) < this.maxSlots[kind]);
  }

  /** Holds `bytes` more, and a slot of `kind` when one is named; the caller asked `fits` first. */
  take(bytes: number, kind?: Slot): void {
    this.held += bytes;
    if (kind !== undefined) this.slots.set(kind, this.taken(kind) + 1);
    if (this.held > this.peak) this.peak = this.held;
  }

  give(bytes: number, kind?: Slot): void {
    this.held -= bytes;
    if (kind !== undefined) this.slots.set(kind, this.taken(kind) - 1);
  }
}

/**
 * One lease's bytes from a budget: what it holds, never more given back than that, and all of it
 * handed back once when the lease ends, so a task that fails half-way leaks nothing.
 */
export class LeasedBytes {
  private held = 0;
  private over = false;

  get bytes(): number {
    return this.held;
  }

  /** Whether the lease has ended (it takes nothing more then). */
  get ended(): boolean {
    return this.over;
  }

  add(bytes: number): void {
    this.held += bytes;
  }

  /** Drops up to `bytes` of what is held; answers how many, for the budget to get back (0: none). */
  release(bytes: number): number {
    const given = Math.min(bytes, this.held);
    if (given <= 0) return 0;
    this.held -= given;
    return given;
  }

  /** Ends the lease: all it held, for the budget to get back; null when it had ended already. */
  end(): number | null {
    if (this.over) return null;
    this.over = true;
    const held = this.held;
    this.held = 0;
    return held;
  }
}
