import { existsSync } from "node:fs";
import { type Client, createClient } from "@libsql/client";
import { realFile } from "../core/files.ts";
import { storageFaultCode } from "../data/db/faults.ts";
import { fileUrl } from "../data/db/location.ts";

// The pid record can be deleted by hand (its refusal says to delete it "if no server runs"), and a
// restore would then replace the file under a live server. So a server also holds, for as long as
// its process lives, an exclusive SQLite lock on `<database file>.serving`: a POSIX byte-range lock
// (fcntl) that the kernel drops when the process ends, however it ends, so it is never left stale.
// A restore that finds it held refuses whatever the pid record says. Node has no flock; SQLite's
// own locking is the one byte-range lock both runtimes reach. Local file systems only: on NFS or
// SMB, fcntl locks may not reach other machines (docs/operations.md).

/** The lock file beside the database file `databasePath` (by its real path, like the pid record). */
export function servingLockPath(databasePath: string): string {
  return `${realFile(databasePath)}.serving`;
}

/**
 * Takes the serving lock of `databasePath` for this process's lifetime; returns the function that
 * gives it back. Throws when another live process holds it.
 */
export async function holdServingLock(databasePath: string): Promise<() => Promise<void>> {
  const path = servingLockPath(databasePath);
  const client = lockClient(path);
  try {
    // EXCLUSIVE locking mode: after its first write the connection keeps the file's exclusive lock until it closes.
    await client.execute("PRAGMA locking_mode = EXCLUSIVE");
    // In memory: no -journal file beside it, and nothing to recover after a crash.
    await client.execute("PRAGMA journal_mode = MEMORY");
    await client.execute("CREATE TABLE IF NOT EXISTS serving (pid INTEGER)");
    await client.execute({ sql: "INSERT INTO serving (pid) VALUES (?)", args: [process.pid] });
    await client.execute("DELETE FROM serving");
  } catch (err) {
    client.close();
    if (isBusy(err))
      throw new Error(
        `another live server holds ${path}: it is already serving ${databasePath}; stop it first, or give this one its own IMGPRESS_DATA_DIR`,
      );
    throw err;
  }
  return async () => {
    try {
      // Closing alone may leave the connection open until its statements are collected: switching
      // back to NORMAL drops the lock at the next access, so this process can take it again at once.
      await client.execute("PRAGMA locking_mode = NORMAL");
      await client.execute("SELECT count(*) FROM serving");
    } finally {
      client.close();
    }
  };
}

/** Why restore (or migrate-data) refuses while `databasePath`'s serving lock is held: nothing to delete, a server runs. */
export function serverHoldsLock(databasePath: string): string {
  return `a running server holds ${servingLockPath(databasePath)} (a lock the system drops when that process ends, however it ends): a server is using ${databasePath} even though its pid record is gone; stop it first (systemctl stop imgpress, or end the process serving that folder)`;
}

/** Whether a live process (a server) holds the serving lock of `databasePath` now. */
export async function servingLockHeld(databasePath: string): Promise<boolean> {
  const path = servingLockPath(databasePath);
  // Every server creates it: none there, none serving (and looking creates nothing).
  if (!existsSync(path)) return false;
  const client = lockClient(path);
  try {
    // Reading needs a shared lock, which the holder's exclusive lock refuses at once.
    await client.execute("SELECT count(*) FROM sqlite_master");
    return false;
  } catch (err) {
    if (isBusy(err)) return true;
    throw err;
  } finally {
    client.close();
  }
}

// A connection that never waits for the lock: a held lock is the answer, not something to wait for.
function lockClient(path: string): Client {
  return createClient({ url: fileUrl(path), timeout: 0, concurrency: 1 });
}

function isBusy(err: unknown): boolean {
  return /^SQLITE_(BUSY|LOCKED)/.test(storageFaultCode(err) ?? "");
}
