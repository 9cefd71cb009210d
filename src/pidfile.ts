import { readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { pid } from "node:process";

/**
 * `<database file>.pid`: written by a serving process, removed when it stops. `imgpress restore`
 * refuses while the process named there is alive. A crash leaves the file behind, but its process
 * is then gone, so it is ignored.
 */
export function pidFilePath(databasePath: string): string {
  return `${databasePath}.pid`;
}

/** Records this process as the server of `databasePath`; returns the function that removes the record. */
export function claimPidFile(databasePath: string): () => void {
  const path = pidFilePath(databasePath);
  writeFileSync(path, `${pid}\n`, { mode: 0o644 });
  return () => {
    // Another server started on the same file later owns the record now: leave it.
    if (serverPid(databasePath) === pid) unlinkSync(path);
  };
}

/** The pid of a live server using `databasePath`, or null. */
export function liveServerPid(databasePath: string): number | null {
  const other = serverPid(databasePath);
  if (other === null || other === pid) return null;
  try {
    process.kill(other, 0);
    return other;
  } catch (err) {
    // EPERM: alive but someone else's process, so still a server.
    return (err as NodeJS.ErrnoException).code === "EPERM" ? other : null;
  }
}

/** Why `databasePath` must not be replaced or copied now (a live server uses it), or null when no server does. */
export function serverInUse(databasePath: string): string | null {
  const holder = liveServerPid(databasePath);
  return holder === null ? null : `a server (pid ${holder}) is using ${databasePath}; stop it first (if no server runs, delete ${pidFilePath(databasePath)})`;
}

function serverPid(databasePath: string): number | null {
  try {
    const value = Number(readFileSync(pidFilePath(databasePath), "utf8").trim());
    return Number.isInteger(value) && value > 0 ? value : null;
  } catch {
    return null;
  }
}
