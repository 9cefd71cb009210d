import { stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { formatBytes } from "../core/bytes.ts";
import type { Config } from "../core/config.ts";
import { statOf } from "../core/files.ts";
import { describeKeyPairs, writeSnapshot } from "../data/db/backup.ts";
import { storageFaultCode } from "../data/db/faults.ts";
import { isPostgresUrl, localPath } from "../data/db/index.ts";
import { inspectDatabaseFile } from "../data/db/inspect.ts";
import { interruptedRestore, restoreInterrupted } from "../data/db/restore-plan.ts";
import {
  existingMasterKey,
  keyFitsDatabase,
  masterKeyMismatch,
  masterKeyOrigin,
  masterKeyPath,
} from "../server/masterkey.ts";
import { interruptible } from "./interrupt.ts";

/** Where CLI output goes: results on `out`, progress and warnings on `err`. */
export interface Output {
  out: (line: string) => void;
  err: (line: string) => void;
}

const MiB = 1024 * 1024;
/** From this size on, a status line says the copy has started (it runs as one blocking statement). */
const LARGE_BYTES = 10 * MiB;
export const stamp = () => new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");

/** Why backup and restore stop on a database server, naming its kind but never its URL (which may hold a password). */
export function notAFile(url: string, postgres: string, libsql: string): string {
  return isPostgresUrl(url)
    ? `the database is PostgreSQL; backup and restore work on the embedded file only: ${postgres} and keep the master key with it (docs/scaling.md#backup)`
    : `the database is a remote libSQL server; ${libsql}`;
}

/**
 * `imgpress backup [FILE|FOLDER/] [--without-key]`: an online snapshot of the database while the server
 * runs. By default the file also carries the master key (so it restores on its own) and the
 * output says to keep it like a password; `--without-key` leaves the key out and says what that costs.
 */
export async function runBackup(
  config: Config,
  file: string | undefined,
  flags: Record<string, string>,
  io: Output,
): Promise<number> {
  const source = localPath(config.databaseUrl);
  if (!source)
    return (
      io.err(
        `imgpress backup: ${notAFile(config.databaseUrl, "back it up with pg_dump", "use that server's own backups")}`,
      ),
      1
    );
  // A folder (existing, or written with a trailing slash) gets the default name inside it.
  const named = file !== undefined && !/[/\\]$/.test(file) && !(await isFolder(file));
  const dest = named ? resolve(file) : await defaultName(file ?? ".");
  // The database first: in the wrong folder, that is what is missing (its master key too).
  if (await restoreInterrupted(source)) return (io.err(`imgpress backup: ${interruptedRestore(source)}`), 1);
  if (!(await isFile(source)))
    return (io.err(`imgpress backup: no database at ${source} (check IMGPRESS_DATA_DIR or IMGPRESS_DATABASE_URL)`), 1);
  const withKey = flags["without-key"] !== "true";
  const masterKey = withKey ? await existingMasterKey(config) : null;
  if (withKey && !masterKey)
    return (io.err(`imgpress backup: no master key (${masterKeyPath(config)} or IMGPRESS_MASTER_KEY) to include`), 1);
  if (!(await isFolder(dirname(dest)))) return (io.err(`imgpress backup: ${await notAFolder(dirname(dest))}`), 1);
  // A backup carrying another key than the database's would restore into a folder that cannot start.
  const facts = masterKey ? await inspectDatabaseFile(source) : null;
  if (masterKey && facts && (await keyFitsDatabase(facts, masterKey)) === false)
    throw masterKeyMismatch(masterKeyOrigin(config));
  const started = Date.now();
  const signals = interruptible(io);
  const result = await writeSnapshot(
    source,
    dest,
    masterKey,
    (expected) => {
      if (expected >= LARGE_BYTES) io.err(`backup: copying about ${formatBytes(expected)} into ${dest}…`);
    },
    signals.leaveNothing,
  )
    .catch((err) => notWritten(dest, err))
    .finally(() => signals.release());
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const json = flags.json === "true";
  if (json)
    io.out(
      JSON.stringify({
        file: dest,
        bytes: result.bytes,
        keyPairs: result.keys.all,
        revokedKeyPairs: result.keys.revoked,
        withMasterKey: withKey,
        seconds: Number(seconds),
      }),
    );
  else io.out(`backup written: ${dest} (${formatBytes(result.bytes)}, ${describeKeyPairs(result.keys)}, ${seconds} s)`);
  // With --json stdout holds the object alone: the advice goes to stderr.
  (json ? io.err : io.out)(
    withKey
      ? "It holds the database AND the master key: anyone with this file can unseal every stored secret. Keep it like a password."
      : "It holds no master key: restored alone it cannot unseal stored secrets (signed requests fail) unless the same master key is in place.",
  );
  return 0;
}

// A backup the destination would not take, said of the destination (SQLite's "database or disk is
// full" reads as if the live database were); nothing of it is left there.
function notWritten(dest: string, err: NodeJS.ErrnoException): never {
  const code = storageFaultCode(err) ?? err.code ?? "";
  const folder = dirname(dest);
  if (/^(SQLITE_FULL|ENOSPC|EDQUOT)/.test(code))
    throw new Error(
      `no room for the backup in ${folder} (${code}): free some space there or choose another folder; nothing was written`,
    );
  // ENOENT: a folder where no file can be made (/proc, /sys), though it exists.
  if (/^(SQLITE_CANTOPEN|SQLITE_READONLY|EROFS|EACCES|EPERM|ENOENT)/.test(code))
    throw new Error(
      `cannot write the backup into ${folder} (${code}): choose a folder this user may write to; nothing was written`,
    );
  throw err;
}

// imgpress-backup-<UTC time>.db in `folder`; a second backup within the same second gets -2, -3…
async function defaultName(folder: string): Promise<string> {
  return `${await unclaimed(resolve(folder, `imgpress-backup-${stamp()}`), (name) => [`${name}.db`])}.db`;
}

// `base`, or `base-2`, `base-3`…: the first for which none of `paths(name)` exists, so that a second
// run within the same second never renames or writes over the first one's files.
export async function unclaimed(base: string, paths: (name: string) => string[]): Promise<string> {
  for (let n = 1; ; n++) {
    const name = n === 1 ? base : `${base}-${n}`;
    if ((await Promise.all(paths(name).map(statOf))).every((s) => s === null)) return name;
  }
}

export async function isFolder(path: string): Promise<boolean> {
  return (await statOf(path))?.isDirectory() ?? false;
}

async function isFile(path: string): Promise<boolean> {
  return (await statOf(path))?.isFile() ?? false;
}

// Why `path` cannot take the backup: missing, not a folder, or out of this process's reach (a
// permission, or under Deno a folder outside --allow-read/--allow-write).
async function notAFolder(path: string): Promise<string> {
  try {
    await stat(path);
    return `${path} is not a folder; choose another path`;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT")
      return `the folder ${path} does not exist; create it first or choose another path`;
    return `cannot use the folder ${path}: ${(err as Error).message}`;
  }
}
