import { readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { pid } from "node:process";
import { realFile } from "./files.ts";

/**
 * `<database file>.pid`: written by a serving process, removed when it stops. A second server on
 * the same file is refused (it would hide the first from this record), and so is `imgpress
 * restore` while the process named there is alive. A crash leaves the file behind, but its
 * process is then gone, so it is ignored.
 */
export function pidFilePath(databasePath: string): string {
  // The file itself, not the name it was reached by: a server on a symbolic link to the database
  // and restore by its real path (or the other way round) must find the same record.
  return `${realFile(databasePath)}.pid`;
}

/**
 * Records this process as the server of `databasePath`, or throws when a live server already is
 * (restore relies on knowing it); returns the function that removes the record.
 */
export function claimPidFile(databasePath: string): () => void {
  const path = pidFilePath(databasePath);
  for (let attempt = 0; ; attempt++) {
    try {
      // Exclusive create: of two servers starting at once, one gets the record.
      writeFileSync(path, `${pid}\n`, { mode: 0o644, flag: "wx" });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw err;
      const holder = recordedServer(databasePath);
      if (holder?.alive) {
        throw new Error(`another server (pid ${holder.pid}) is already serving ${databasePath}; stop it first, or give this one its own IMGPRESS_DATA_DIR (if no server runs, delete ${path})`);
      }
      // Cannot tell (Deno without --allow-run): refusing would stop every restart after a crash, and
      // taking the record over would hide a live first server from restore and migrate-data; this
      // server runs without a record of its own, and leaves that one alone.
      if (holder && holder.alive === undefined) return () => {};
      // Left by a crash (or half written): its process is gone.
      rmSync(path, { force: true });
    }
  }
  // The record written above, by the name it was written under (the database file may have come into being since).
  return () => {
    if (recordedPid(path) === pid) unlinkSync(path);
  };
}

/** The server recorded for `databasePath`, or null: alive, gone, or undefined where this runtime may not tell (Deno without --allow-run). */
function recordedServer(databasePath: string): { pid: number; alive: boolean | undefined } | null {
  const other = serverPid(databasePath);
  if (other === null || other === pid) return null;
  try {
    process.kill(other, 0);
    return { pid: other, alive: !isZombie(other) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // EPERM: alive but someone else's process, so still a server; no code at all: not allowed to ask.
    return { pid: other, alive: code === "EPERM" ? true : code === undefined ? undefined : false };
  }
}

// A server killed with kill -9 whose parent has not reaped it yet still answers kill(pid, 0), but
// serves nothing (Linux; elsewhere, or where /proc cannot be read, it counts as alive).
function isZombie(other: number): boolean {
  try {
    const stat = readFileSync(`/proc/${other}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z";
  } catch {
    return false;
  }
}

/** Why `databasePath` must not be replaced or copied now (a live server uses it, or one may), or null when no server does. */
export function serverInUse(databasePath: string): string | null {
  const holder = recordedServer(databasePath);
  const record = pidFilePath(databasePath);
  if (holder?.alive) return `a server (pid ${holder.pid}) is using ${databasePath}; stop it first (if no server runs, delete ${record})`;
  if (holder !== null && holder.alive === undefined) {
    return `${record} names process ${holder.pid}, and this runtime may not ask whether it runs (Deno without --allow-run): stop that server first; if none runs, delete ${record}`;
  }
  return null;
}

function serverPid(databasePath: string): number | null {
  return recordedPid(pidFilePath(databasePath));
}

function recordedPid(record: string): number | null {
  try {
    const value = Number(readFileSync(record, "utf8").trim());
    return Number.isInteger(value) && value > 0 ? value : null;
  } catch {
    return null;
  }
}
