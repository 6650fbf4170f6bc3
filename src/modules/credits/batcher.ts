/** How a Batcher groups what it is handed. */
export interface BatcherOptions {
  /** How long the first member of a batch waits for others, at most (milliseconds). */
  windowMs: number;
  /** A batch is sent as soon as it has this many members. */
  maxSize: number;
  /** Batches sent and not answered yet, at most; while that many are out, the next one keeps growing. */
  maxInFlight: number;
}

/** One member's answer: its value, or the error that is its alone. */
export type MemberOutcome<O> = { value: O } | { error: unknown };

interface Member<I, O> {
  item: I;
  resolve(value: O): void;
  reject(err: unknown): void;
}

/**
 * Groups what arrives together into one call of `send` (group commit, as TigerBeetle batches its
 * transfers). A member that finds no batch in flight goes at once, alone; otherwise the first
 * member of the next batch waits at most `windowMs` for others; a batch goes as soon as it is
 * full; while `maxInFlight` batches are out, the next keeps growing, and goes as soon as one of
 * them is answered. `send` answers each member on its own; when it throws, every member of that
 * batch gets the error.
 */
export class Batcher<I, O> {
  private pending: Member<I, O>[] = [];
  private timer: NodeJS.Timeout | null = null;
  private inFlight = 0;
  /** The window of the pending batch has passed (or it filled) while every slot was taken. */
  private due = false;

  constructor(
    private readonly send: (items: I[]) => Promise<MemberOutcome<O>[]>,
    private readonly options: BatcherOptions,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      // With nothing in flight there is nobody to wait for: a lone request pays no window at all.
      if (this.pending.length >= this.options.maxSize || this.inFlight === 0) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.options.windowMs);
    });
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.inFlight >= this.options.maxInFlight) {
      this.due = true;
      return;
    }
    this.due = false;
    const batch = this.pending.splice(0, this.options.maxSize);
    if (!batch.length) return;
    // Members left over from a full batch start a window of their own.
    if (this.pending.length) this.timer = setTimeout(() => this.flush(), this.options.windowMs);
    this.inFlight++;
    this.send(batch.map((m) => m.item))
      .then(
        (outcomes) => batch.forEach((m, i) => settle(m, outcomes[i] ?? { error: new Error('no answer for a batch member') })),
        (err: unknown) => batch.forEach((m) => m.reject(err)),
      )
      .finally(() => {
        this.inFlight--;
        if (this.due || this.pending.length >= this.options.maxSize) this.flush();
      });
  }
}

function settle<I, O>(member: Member<I, O>, outcome: MemberOutcome<O>): void {
  if ('error' in outcome) member.reject(outcome.error);
  else member.resolve(outcome.value);
}
