import type { Timers } from "../../src/core/timers.ts";

/** Timers that fire only when the test moves time on, in the order of their deadlines. */
export interface ManualTimers extends Timers {
  /** Moves time on by `ms`, firing every timer due by then (a timer set by one that fires is due from its own start). */
  advance(ms: number): void;
  /** Timers set and not yet fired or cleared. */
  pending(): number;
}

/** Hand-driven timers for the gate's queue and abandon limits: no test waits for a real clock. */
export function manualTimers(): ManualTimers {
  let now = 0;
  let next = 0;
  const due = new Map<number, { at: number; fire: () => void }>();
  return {
    set(fire, ms) {
      const id = ++next;
      due.set(id, { at: now + ms, fire });
      return id;
    },
    clear: (handle) => void due.delete(handle as number),
    pending: () => due.size,
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const first = [...due.entries()]
          .filter(([, t]) => t.at <= until)
          .sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
        if (!first) break;
        due.delete(first[0]);
        now = first[1].at;
        first[1].fire();
      }
      now = until;
    },
  };
}
