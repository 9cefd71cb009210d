import type { Logger } from "../core/log.ts";

/** One step of an orderly stop, e.g. flushing buffered usage counts. */
export interface ShutdownHook {
  name: string;
  run: () => Promise<void>;
}

/**
 * The service's stopping state, shared by the server (which starts the drain), readiness (which
 * turns 503 while draining) and whatever holds buffered state (which joins with `onShutdown`).
 * It knows nothing of sockets or signals, so tests can drive it directly.
 */
export class Lifecycle {
  private drainStarted = false;
  private readonly hooks: ShutdownHook[] = [];
  private readonly unfinished = new Set<Promise<void>>();

  /** True from the first shutdown signal on. */
  get draining(): boolean {
    return this.drainStarted;
  }

  /** Registers a step to run after the last request has finished and before the database closes. */
  onShutdown(name: string, run: () => Promise<void>): void {
    this.hooks.push({ name, run });
  }

  /**
   * Keeps `work` that goes on after its request was answered (a mail sent afterwards) until it
   * ends, so a stop can wait for it (`settled`). `work` must handle its own failure.
   */
  track(work: Promise<void>): void {
    this.unfinished.add(work);
    void work.finally(() => this.unfinished.delete(work));
  }

  /** Resolves once the work `track` holds has ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.unfinished]);
  }

  /** Marks the service as draining, for good: readiness reads `draining` from here. */
  beginDrain(): void {
    this.drainStarted = true;
  }

  /** Runs every hook in registration order; a failing hook is logged and does not stop the others. Returns how many failed. */
  async runHooks(logger: Logger): Promise<number> {
    let failed = 0;
    for (const hook of this.hooks) {
      try {
        await hook.run();
        logger.info("shutdown step done", { step: hook.name });
      } catch (err) {
        failed++;
        logger.error("shutdown step failed", { step: hook.name, error: err as Error });
      }
    }
    return failed;
  }
}
