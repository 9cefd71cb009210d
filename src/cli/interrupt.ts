import { rmSync } from "node:fs";

// 128 + the signal's number, as a shell reports a process the signal ended.
const EXIT_STATUS: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };

/**
 * Until `release`, SIGINT, SIGTERM and SIGHUP (the terminal closed) remove the files named by
 * `leaveNothing`, say so (or `outcome`, what stopping leaves behind) and exit (130 / 143 / 129)
 * instead of leaving a half-written copy behind (hundreds of MB for a large database)
 * unexplained; a signal during `uninterrupted` (moving databases into place) waits for it to
 * finish first.
 */
export function interruptible(io: { err: (line: string) => void }, outcome?: string) {
  let leftovers: string[] = [];
  let busy = false;
  let pending: NodeJS.Signals | null = null;
  const stop = (signal: NodeJS.Signals) => {
    for (const path of leftovers) rmSync(path, { force: true });
    const said = outcome ?? (leftovers.length ? "the partial copy was removed" : undefined);
    io.err(`imgpress: stopped by ${signal}${said ? `; ${said}` : ""}`);
    process.exit(EXIT_STATUS[signal] ?? 143);
  };
  const onSignal = (signal: NodeJS.Signals) => (busy ? (pending = signal) : stop(signal));
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.on("SIGHUP", onSignal);
  return {
    leaveNothing: (paths: string[]) => void (leftovers = paths),
    async uninterrupted<T>(steps: () => Promise<T>): Promise<T> {
      busy = true;
      try {
        return await steps();
      } finally {
        busy = false;
        if (pending) stop(pending);
      }
    },
    release() {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      process.off("SIGHUP", onSignal);
    },
  };
}
