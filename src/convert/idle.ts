import type { ConversionGate } from "./gate.ts";
import type { ConversionObserver } from "./service.ts";

/** How long the gate must stay empty after a conversion before freed memory is handed back: longer than the gaps within a burst. */
export const IDLE_RELEASE_MS = 2000;

/**
 * A conversion observer that calls `release` once nothing has been admitted for `delayMs` after
 * the last conversion, and again only after further conversions. The allocator keeps freed pixel
 * buffers for reuse, which saves page faults while images keep coming; `release` (glibc's
 * malloc_trim) hands them back to the system when the load is over.
 */
export function releaseWhenIdle(gate: Pick<ConversionGate, "stats">, release: () => void, delayMs = IDLE_RELEASE_MS): ConversionObserver {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    timer = setTimeout(check, delayMs);
    // A pending release must not keep a stopping process alive.
    (timer as { unref?: () => void }).unref?.();
  };
  const check = () => {
    timer = undefined;
    // Uploads or conversions still in the gate: look again later rather than trim under load.
    if (gate.stats().admitted > 0) arm();
    else release();
  };
  return () => {
    clearTimeout(timer);
    arm();
  };
}
