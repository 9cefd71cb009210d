import { AppError } from "../errors.ts";

/** Sizing of the conversion gate. */
export interface GateOptions {
  /** Conversions running at once. */
  concurrency: number;
  /** Requests admitted beyond the running ones (uploading or waiting). */
  queueSize: number;
  /** Longest wait for a slot. */
  queueTimeoutMs: number;
}

/** Live numbers for /internal/status and the bench. */
export interface GateStats {
  admitted: number;
  running: number;
  waiting: number;
  rejected: number;
}

interface Waiter {
  heavy: boolean;
  start: () => void;
}

/**
 * Backpressure for conversions. `admit` caps how many requests may hold an upload in memory
 * (running + queued) and answers 503 at once beyond it; `run` then waits for one of the
 * `concurrency` slots. Heavy jobs (lossless) may occupy all slots but one, so a burst of slow
 * lossless requests cannot starve lossy ones.
 */
export class ConversionGate {
  private admitted = 0;
  private running = 0;
  private runningHeavy = 0;
  private rejected = 0;
  private readonly waiting: Waiter[] = [];
  private readonly maxHeavy: number;

  constructor(private readonly options: GateOptions) {
    this.maxHeavy = Math.max(1, options.concurrency - 1);
  }

  /** Takes a place for one request, or throws 503 SERVER_BUSY; call the returned function once to leave. */
  admit(): () => void {
    if (this.admitted >= this.options.concurrency + this.options.queueSize) {
      this.rejected++;
      throw busy("The server is converting as many images as it can hold.");
    }
    this.admitted++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.admitted--;
    };
  }

  /** Runs `job` in a conversion slot once one is free, or throws 503 SERVER_BUSY after the queue timeout. */
  async run<T>(heavy: boolean, job: () => Promise<T>): Promise<T> {
    await this.acquire(heavy);
    let busyUntil: Promise<unknown> | undefined;
    try {
      return await job();
    } catch (err) {
      // A job that gave up waiting on work it cannot cancel still occupies its slot until that work ends.
      busyUntil = (err as { stillRunning?: Promise<unknown> }).stillRunning;
      throw err;
    } finally {
      const release = () => {
        this.running--;
        if (heavy) this.runningHeavy--;
        this.pump();
      };
      if (busyUntil) busyUntil.finally(release);
      else release();
    }
  }

  /** Current counts. */
  stats(): GateStats {
    return { admitted: this.admitted, running: this.running, waiting: this.waiting.length, rejected: this.rejected };
  }

  private canStart(heavy: boolean): boolean {
    return this.running < this.options.concurrency && (!heavy || this.runningHeavy < this.maxHeavy);
  }

  private take(heavy: boolean): void {
    this.running++;
    if (heavy) this.runningHeavy++;
  }

  private acquire(heavy: boolean): Promise<void> {
    // Start now if a slot is free and nobody waiting could use it (waiters may be heavy jobs held back by the cap).
    if (this.canStart(heavy) && this.waiting.every((w) => !this.canStart(w.heavy))) {
      this.take(heavy);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        heavy,
        start: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        this.rejected++;
        reject(busy("No conversion slot became free in time."));
      }, this.options.queueTimeoutMs);
      this.waiting.push(waiter);
    });
  }

  // First come, first served, except that a heavy job at the head does not block light ones behind it.
  private pump(): void {
    for (let i = 0; i < this.waiting.length && this.running < this.options.concurrency; ) {
      const waiter = this.waiting[i]!;
      if (!this.canStart(waiter.heavy)) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      this.take(waiter.heavy);
      waiter.start();
    }
  }
}

function busy(why: string): AppError {
  return new AppError(503, "SERVER_BUSY", `${why} Retry shortly.`, { "retry-after": "5" });
}
