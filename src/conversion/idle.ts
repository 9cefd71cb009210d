import type { ConversionGate } from "./gate.ts";
import type { ConversionObserver } from "./service.ts";

/** How long the gate must stay empty after a conversion before freed memory is handed back: longer than the gaps within a burst. */
const IDLE_RELEASE_MS = 2000;

/** The timer functions releaseWhenIdle uses; a test passes a hand-driven clock. */
export interface Timers {
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: Timers = {
  set(run, ms) {
    const handle = setTimeout(run, ms);
    // A pending release must not keep a stopping process alive.
    (handle as { unref?: () => void }).unref?.();
    return handle;
  },
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * A conversion observer that calls `release` once nothing has been admitted for `delayMs` after
 * the last conversion, and again only after further conversions. The allocator keeps freed pixel
 * buffers for reuse, which saves page faults while images keep coming; `release` (under Bun a full
 * garbage collection, then glibc's malloc_trim) hands them back to the system when the load is over.
 */
export function releaseWhenIdle(
  gate: Pick<ConversionGate, "stats">,
  release: () => void,
  delayMs = IDLE_RELEASE_MS,
  timers: Timers = realTimers,
): ConversionObserver {
  let timer: unknown;
  const check = () => {
    timer = undefined;
    // Uploads or conversions still in the gate: look again later rather than trim under load.
    if (gate.stats().admitted > 0 || gate.stats().receiving > 0) timer = timers.set(check, delayMs);
    else release();
  };
  return () => {
    if (timer !== undefined) timers.clear(timer);
    timer = timers.set(check, delayMs);
  };
}
