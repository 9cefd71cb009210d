/** Timers as the timed parts use them (the gate's queue and abandon limits): the runtime's, or a test's hand-driven ones. */
export interface Timers {
  /** Calls `fire` once after `ms`; with `unref`, the timer does not keep a stopping process alive. */
  set(fire: () => void, ms: number, options?: { unref?: boolean }): unknown;
  /** Cancels a timer `set` returned (a fired or cleared one is ignored). */
  clear(handle: unknown): void;
}

/** The runtime's setTimeout and clearTimeout. */
export const realTimers: Timers = {
  set(fire, ms, options) {
    const timer = setTimeout(fire, ms);
    if (options?.unref) (timer as { unref?: () => void }).unref?.();
    return timer;
  },
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
