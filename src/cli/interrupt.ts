import { rmSync } from "node:fs";

/**
 * Until `release`, SIGINT and SIGTERM remove the files named by `leaveNothing`, say so (or
 * `outcome`, what stopping leaves behind) and exit (130 / 143) instead of leaving a half-written
 * copy behind (hundreds of MB for a large database) unexplained; a signal during `uninterrupted`
 * (moving databases into place) waits for it to finish first.
 */
export function interruptible(io: { err: (line: string) => void }, outcome?: string) {
  let leftovers: string[] = [];
  let busy = false;
  let pending: NodeJS.Signals | null = null;
  const stop = (signal: NodeJS.Signals) => {
    for (const path of leftovers) rmSync(path, { force: true });
    const said = outcome ?? (leftovers.length ? "the partial copy was removed" : undefined);
    io.err(`imgpress: stopped by ${signal}${said ? `; ${said}` : ""}`);
    process.exit(signal === "SIGINT" ? 130 : 143);
  };
  const onSignal = (signal: NodeJS.Signals) => (busy ? (pending = signal) : stop(signal));
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
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
    },
  };
}
