/**
 * Another process holding a libSQL/SQLite file's write lock: the `sqlite3` CLI with `BEGIN
 * EXCLUSIVE` and a write open (as a backup tool or an operator would), until `release` commits.
 * The write matters: after it, a connection that kept its old snapshot can no longer write.
 *
 *   const lock = await holdSqliteLock(file, "UPDATE heartbeat SET at = at + 1");
 *   … the file is locked …
 *   await lock.release();
 */
import { spawn, spawnSync } from "node:child_process";

/** Whether the `sqlite3` CLI is installed (Debian's `sqlite3` package). */
export const hasSqlite3 = spawnSync("sqlite3", ["-version"]).status === 0;

/** A held lock. */
export interface SqliteLock {
  /** Commits the CLI's transaction and waits for it to exit. */
  release(): Promise<void>;
}

/** Starts `sqlite3 file`, begins an exclusive transaction, runs `write` in it; resolves once the lock is held. */
export async function holdSqliteLock(file: string, write: string): Promise<SqliteLock> {
  const cli = spawn("sqlite3", [file], { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise<void>((resolve) => cli.once("exit", () => resolve()));
  cli.stdin.write(`BEGIN EXCLUSIVE;\n${write};\nSELECT 'locked';\n`);
  await new Promise<void>((resolve, reject) => {
    cli.stdout.once("data", () => resolve());
    cli.once("error", reject);
    cli.once("exit", (code) => reject(new Error(`sqlite3 exited (${code}) before holding the lock`)));
  });
  return {
    async release() {
      cli.stdin.end("COMMIT;\n");
      await exited;
    },
  };
}

/** One value read by the CLI beside whoever has the file open: the first column of the first row. */
export function sqliteScalar(file: string, sql: string): string {
  return spawnSync("sqlite3", [file, sql], { encoding: "utf8" }).stdout.trim();
}
