import { AppError } from '../../errors.js';

/** What a refused stream should wait before trying again: streams end, but no one knows when. */
const RETRY_AFTER_SECONDS = 5;

/** A place taken in the limits; give it back once, when the stream ends. */
export type Release = () => void;

/**
 * The process's stream bounds: streams open per account (STREAM_MAX_PER_ACCOUNT) and ffmpeg
 * processes running (STREAM_FFMPEG_CONCURRENCY). Never waited on: past a bound the stream is refused
 * at once, with Retry-After.
 */
export class StreamLimits {
  private readonly perAccount = new Map<string, number>();
  private ffmpegs = 0;

  constructor(private readonly bounds: { maxPerAccount: number; ffmpegConcurrency: number }) {}

  /** A place for one stream of the account, or 429 RATE_LIMITED. */
  takeAccount(accountId: string): Release {
    const open = this.perAccount.get(accountId) ?? 0;
    if (open >= this.bounds.maxPerAccount) {
      throw new AppError('RATE_LIMITED', `This account has ${open} streams open, the most it may; retry when one ends.`, {
        retryAfterSeconds: RETRY_AFTER_SECONDS,
        limit: this.bounds.maxPerAccount,
      });
    }
    this.perAccount.set(accountId, open + 1);
    return once(() => {
      const left = (this.perAccount.get(accountId) ?? 1) - 1;
      if (left > 0) this.perAccount.set(accountId, left);
      else this.perAccount.delete(accountId);
    });
  }

  /** A place for one ffmpeg process, or 503 PROVIDER_UNAVAILABLE. */
  takeFfmpeg(): Release {
    if (this.ffmpegs >= this.bounds.ffmpegConcurrency) {
      throw new AppError('PROVIDER_UNAVAILABLE', 'Every stream processor of this gateway is busy; retry in a few seconds.', {
        retryAfterSeconds: RETRY_AFTER_SECONDS,
        limit: this.bounds.ffmpegConcurrency,
      });
    }
    this.ffmpegs += 1;
    return once(() => {
      this.ffmpegs -= 1;
    });
  }

  /** What is taken now (metrics, tests). */
  get state(): { accounts: number; ffmpegs: number } {
    return { accounts: this.perAccount.size, ffmpegs: this.ffmpegs };
  }
}

function once(fn: () => void): Release {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
