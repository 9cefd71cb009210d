import { AppError } from "../core/errors.ts";
import { realTimers, type Timers } from "../core/timers.ts";

/** Sizing of the conversion gate. */
export interface GateOptions {
  /** Conversion slots: a normal or heavy job takes one, a light job half of one. */
  concurrency: number;
  /** Requests admitted beyond `concurrency` (uploading, waiting, or light jobs running in half slots). */
  queueSize: number;
  /**
   * Most places one owner (an API key) may hold at once, so that one client's stalled uploads or
   * burst cannot take every place from the others. Default: no limit beyond the total.
   */
  maxAdmittedPerOwner?: number;
  /**
   * Most bytes the uploads being received may reserve together (each its Content-Length, at least
   * MIN_UPLOAD_RESERVATION), from their first byte until their conversion ends. An upload being
   * received holds no place: only this budget, so slow uploads cannot keep others from converting.
   * Default: no limit.
   */
  uploadBudgetBytes?: number;
  /** Most of that budget one client (address or IPv6 prefix) may hold at once. Default: all of it. */
  uploadShareBytes?: number;
  /** Longest wait for room (a slot, and memory when a budget is set). */
  queueTimeoutMs: number;
  /**
   * How long a job that gave up at its time limit keeps its slot while the work it could not
   * cancel runs on; after that the work is presumed hung and the slot is given back. Infinity (or
   * anything beyond setTimeout's ~24.8 days): never.
   */
  abandonAfterMs: number;
  /**
   * Most memory the running jobs may take together (their estimates, bytes): a job waits until
   * its estimate fits beside the running ones, except that a job may always run alone. Default: no limit.
   */
  memoryBudgetBytes?: number;
  /** The queue and abandon timers (default: the runtime's); tests drive them by hand. */
  timers?: Timers;
}

/** Live numbers for /internal/status and the bench. */
export interface GateStats {
  admitted: number;
  running: number;
  /** Slots in use: a light job counts a half, so this may be below `running`. */
  slotsBusy: number;
  waiting: number;
  rejected: number;
  /** Jobs whose slot was given back while their work had still not stopped (`abandonAfterMs`); such work may still hold memory. */
  abandoned: number;
  /** The running jobs' memory estimates together, MiB. */
  memoryReservedMiB: number;
  /** Uploads holding a reservation of the upload budget (being received, or received and not yet converted). */
  receiving: number;
  /** Their reservations together, MiB. */
  receivingMiB: number;
}

/** The least an upload reserves, whatever its Content-Length: its connection and buffers cost something too. */
export const MIN_UPLOAD_RESERVATION = 64 * 1024;

/**
 * How much of the machine a job takes: `light` (a lossy conversion of a small image) half a
 * slot, `normal` one, `heavy` (lossless) one, and heavy jobs never all of them.
 */
export type JobWeight = "light" | "normal" | "heavy";

/** setTimeout's longest delay (~24.8 days); a longer one would fire at once. Beyond it the gate never gives a slot up. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A slot is two units, so two light jobs share one. */
const UNITS: Record<JobWeight, number> = { light: 1, normal: 2, heavy: 2 };

interface Waiter {
  weight: JobWeight;
  memory: number;
  start: () => void;
}

/**
 * Backpressure for conversions. `admit` caps how many requests may hold an upload in memory
 * (running + queued) and answers 503 at once beyond it, 429 beyond one owner's share; `run` then
 * waits for room in the `concurrency` slots and in the memory budget. A light job takes half a slot: a small image spends a good part of its
 * conversion on the JavaScript thread (header, sample, scoring) rather than in libvips, so one
 * per core would leave the cores idle. Heavy jobs (lossless) may occupy all slots but one, so a
 * burst of slow lossless requests cannot starve lossy ones. First come, first served: no job
 * overtakes one that waits for room (slots or memory), so a large job is never starved by small ones.
 */
export class ConversionGate {
  private admitted = 0;
  private running = 0;
  private usedUnits = 0;
  private usedMemory = 0;
  private runningHeavy = 0;
  private rejected = 0;
  private abandoned = 0;
  private readonly waiting: Waiter[] = [];
  private readonly admittedBy = new Map<string, number>();
  private receiving = 0;
  private reservedBytes = 0;
  private readonly reservedBy = new Map<string, number>();
  private readonly abandonedListeners: ((weight: JobWeight) => void)[] = [];
  private readonly maxHeavy: number;
  private readonly capacity: number;
  private readonly timers: Timers;

  constructor(private readonly options: GateOptions) {
    this.maxHeavy = Math.max(1, options.concurrency - 1);
    this.capacity = options.concurrency * UNITS.normal;
    this.timers = options.timers ?? realTimers;
  }

  /** Tells `listener` each time a slot is given back from work that never stopped (`abandonAfterMs`): a log line, a metric; it must not throw. */
  onAbandoned(listener: (weight: JobWeight) => void): void {
    this.abandonedListeners.push(listener);
  }

  /**
   * Takes a place for one request of `owners` (its key, its client address: each holds at most
   * its share), or throws 503 SERVER_BUSY (no place left) or 429 TOO_MANY_IN_PROGRESS (one of
   * them holds its share); call the returned function once to leave.
   */
  admit(...owners: string[]): () => void {
    if (this.admitted >= this.options.concurrency + this.options.queueSize) {
      this.rejected++;
      throw busy("The server is converting as many images as it can hold.");
    }
    const share = this.options.maxAdmittedPerOwner ?? Infinity;
    const full = owners.find((owner) => (this.admittedBy.get(owner) ?? 0) >= share);
    if (full !== undefined) throw tooManyInProgress(share, full);
    this.admitted++;
    for (const owner of owners) this.admittedBy.set(owner, (this.admittedBy.get(owner) ?? 0) + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.admitted--;
      for (const owner of owners) {
        const rest = this.admittedBy.get(owner)! - 1;
        if (rest > 0) this.admittedBy.set(owner, rest);
        else this.admittedBy.delete(owner);
      }
    };
  }

  /**
   * Reserves `bytes` of the upload budget for one upload of `client` before its body is read, or
   * throws 503 SERVER_BUSY (the budget is spent) or 429 TOO_MANY_IN_PROGRESS (this client holds
   * its share); call the returned function once to give it back.
   */
  reserveUpload(client: string, bytes: number): () => void {
    const size = Math.max(MIN_UPLOAD_RESERVATION, bytes);
    const held = this.reservedBy.get(client) ?? 0;
    if (this.reservedBytes + size > (this.options.uploadBudgetBytes ?? Infinity)) {
      this.rejected++;
      throw busy("The server is receiving as many uploads as it can hold.");
    }
    if (held > 0 && held + size > (this.options.uploadShareBytes ?? Infinity)) throw tooManyUploading();
    this.receiving++;
    this.reservedBytes += size;
    this.reservedBy.set(client, held + size);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.receiving--;
      this.reservedBytes -= size;
      const rest = this.reservedBy.get(client)! - size;
      if (rest > 0) this.reservedBy.set(client, rest);
      else this.reservedBy.delete(client);
    };
  }

  /**
   * Runs `job` once there is room for its weight and its memory estimate (`memoryBytes`), or
   * throws 503 SERVER_BUSY after the queue timeout, or 499 CLIENT_CLOSED_REQUEST when `signal`
   * (the request's: aborted when the client disconnects) aborts first: nobody would read the result.
   */
  async run<T>(
    weight: JobWeight,
    job: () => Promise<T>,
    { memoryBytes = 0, signal }: { memoryBytes?: number; signal?: AbortSignal } = {},
  ): Promise<T> {
    await this.acquire(weight, memoryBytes, signal);
    let busyUntil: Promise<unknown> | undefined;
    try {
      return await job();
    } catch (err) {
      // A job that gave up waiting on work it cannot cancel still occupies its slot until that work ends.
      busyUntil = (err as { stillRunning?: Promise<unknown> }).stillRunning;
      throw err;
    } finally {
      if (busyUntil) this.releaseWhenSettled(weight, memoryBytes, busyUntil);
      else this.release(weight, memoryBytes);
    }
  }

  /** Current counts. */
  stats(): GateStats {
    const memoryReservedMiB = Math.round(this.usedMemory / 2 ** 20);
    const receivingMiB = Math.round(this.reservedBytes / 2 ** 20);
    return {
      admitted: this.admitted,
      running: this.running,
      slotsBusy: this.usedUnits / UNITS.normal,
      waiting: this.waiting.length,
      rejected: this.rejected,
      abandoned: this.abandoned,
      memoryReservedMiB,
      receiving: this.receiving,
      receivingMiB,
    };
  }

  private release(weight: JobWeight, memory: number): void {
    this.running--;
    this.usedUnits -= UNITS[weight];
    this.usedMemory -= memory;
    if (weight === "heavy") this.runningHeavy--;
    this.pump();
  }

  // The slot stays taken while the work runs on, so timeouts cannot pile encoders onto the cores;
  // but work that never settles (seen once: a sharp call whose promise never settled, no thread
  // busy) would hold it for good, and a few of them would stop the server converting.
  private releaseWhenSettled(weight: JobWeight, memory: number, busyUntil: Promise<unknown>): void {
    let released = false;
    const releaseOnce = () => {
      if (released) return;
      released = true;
      this.timers.clear(timer);
      this.release(weight, memory);
    };
    const abandon = () => {
      this.abandoned++;
      releaseOnce();
      for (const listener of this.abandonedListeners) listener(weight);
    };
    // A stopping process must not wait for work it would give up anyway.
    const timer =
      this.options.abandonAfterMs <= MAX_TIMER_MS
        ? this.timers.set(abandon, this.options.abandonAfterMs, { unref: true })
        : undefined;
    busyUntil.then(releaseOnce, releaseOnce);
  }

  /** A heavy job held back by the cap waits aside: the jobs behind it may start. */
  private allowed(weight: JobWeight): boolean {
    return weight !== "heavy" || this.runningHeavy < this.maxHeavy;
  }

  private fits(weight: JobWeight, memory: number): boolean {
    const memoryFits = this.running === 0 || this.usedMemory + memory <= (this.options.memoryBudgetBytes ?? Infinity);
    return memoryFits && this.usedUnits + UNITS[weight] <= this.capacity;
  }

  private take(weight: JobWeight, memory: number): void {
    this.running++;
    this.usedUnits += UNITS[weight];
    this.usedMemory += memory;
    if (weight === "heavy") this.runningHeavy++;
  }

  private acquire(weight: JobWeight, memory: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(clientGone());
    // Start now if there is room and nobody is waiting for room (only cap-held heavy jobs may be waiting).
    if (this.allowed(weight) && this.fits(weight, memory) && !this.waiting.some((w) => this.allowed(w.weight))) {
      this.take(weight, memory);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        weight,
        memory,
        start: () => {
          this.timers.clear(timer);
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const leaveQueue = (err: AppError) => {
        const at = this.waiting.indexOf(waiter);
        if (at !== -1) this.waiting.splice(at, 1);
        signal?.removeEventListener("abort", onAbort);
        reject(err);
        // The one that left may have been what the jobs behind it waited for.
        this.pump();
      };
      const timer = this.timers.set(() => {
        this.rejected++;
        leaveQueue(busy("No room to convert (a slot and memory) became free in time."));
      }, this.options.queueTimeoutMs);
      const onAbort = () => {
        this.timers.clear(timer);
        leaveQueue(clientGone());
      };
      signal?.addEventListener("abort", onAbort);
      this.waiting.push(waiter);
    });
  }

  // First come, first served, except that a heavy job held back by the cap does not block the jobs behind it.
  private pump(): void {
    for (let i = 0; i < this.waiting.length; ) {
      const waiter = this.waiting[i]!;
      if (!this.allowed(waiter.weight)) {
        i++;
        continue;
      }
      if (!this.fits(waiter.weight, waiter.memory)) break;
      this.waiting.splice(i, 1);
      this.take(waiter.weight, waiter.memory);
      waiter.start();
    }
  }
}

function clientGone(): AppError {
  return new AppError(
    499,
    "CLIENT_CLOSED_REQUEST",
    "The client closed the connection before its conversion started; it was not converted.",
  );
}

/** The owner a client address is admitted as (ConvertService's other owner is its key). */
export const ADDRESS_OWNER = "address:";

function tooManyInProgress(share: number, owner: string): AppError {
  const who = owner.startsWith(ADDRESS_OWNER) ? "This client address" : "This key";
  const whatever = owner.startsWith(ADDRESS_OWNER) ? ", whatever their keys" : "";
  return new AppError(
    429,
    "TOO_MANY_IN_PROGRESS",
    `${who} already has ${share} conversion${share === 1 ? "" : "s"} in progress (uploading, waiting or running)${whatever}; send the next when one has finished.`,
    { "retry-after": "5" },
  );
}

function tooManyUploading(): AppError {
  return new AppError(
    429,
    "TOO_MANY_IN_PROGRESS",
    "This client address already has its share of uploads in progress (by their Content-Length), whatever their keys; send the next when one has finished.",
    { "retry-after": "5" },
  );
}

function busy(why: string): AppError {
  return new AppError(503, "SERVER_BUSY", `${why} Retry shortly.`, { "retry-after": "5" });
}
