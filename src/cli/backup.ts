import { Buffer } from "node:buffer";
import { chown, mkdir, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { formatBytes } from "../core/bytes.ts";
import type { Config } from "../core/config.ts";
import { realFile, statOf } from "../core/files.ts";
import {
  DATABASE_FILE_SUFFIXES,
  describeKeyPairs,
  removeDatabaseFiles,
  sameKey,
  stageSnapshot,
  writeSnapshot,
} from "../data/db/backup.ts";
import { storageFaultCode } from "../data/db/faults.ts";
import { fileUrl, isPostgresUrl, localPath, openStore } from "../data/db/index.ts";
import { inspectDatabaseFile } from "../data/db/inspect.ts";
import {
  carryOutRestore,
  finishInterruptedRestore,
  interruptedRestore,
  type RestorePlan,
  restoreInterrupted,
  undoRestore,
  writeRestorePlan,
} from "../data/db/restore-plan.ts";
import {
  existingMasterKey,
  keyFitsDatabase,
  masterKeyMismatch,
  masterKeyOrigin,
  masterKeyPath,
} from "../server/masterkey.ts";
import { claimPidFile, serverInUse } from "../server/pidfile.ts";
import { serverHoldsLock, servingLockHeld } from "../server/servinglock.ts";
import { UsageError } from "./args.ts";
import { migrateReport } from "./index.ts";
import { interruptible } from "./interrupt.ts";

/** Where CLI output goes: results on `out`, progress and warnings on `err`. */
export interface Output {
  out: (line: string) => void;
  err: (line: string) => void;
}

const MiB = 1024 * 1024;
/** From this size on, a status line says the copy has started (it runs as one blocking statement). */
const LARGE_BYTES = 10 * MiB;
const stamp = () => new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");

/** Why backup and restore stop on a database server, naming its kind but never its URL (which may hold a password). */
function notAFile(url: string, postgres: string, libsql: string): string {
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
async function unclaimed(base: string, paths: (name: string) => string[]): Promise<string> {
  for (let n = 1; ; n++) {
    const name = n === 1 ? base : `${base}-${n}`;
    if ((await Promise.all(paths(name).map(statOf))).every((s) => s === null)) return name;
  }
}

/**
 * `imgpress restore FILE`: refuses while a server uses the database, checks the snapshot before
 * touching anything, keeps the old database (and a replaced master key file) aside, then migrates.
 */
export async function runRestore(
  config: Config,
  file: string | undefined,
  flags: Record<string, string>,
  io: Output,
): Promise<number> {
  if (!file) throw new UsageError("restore needs the backup to restore: imgpress restore FILE");
  // Through a symbolic link to the database, the file it names is replaced (not the link, which the server would still follow to the old file).
  const configured = localPath(config.databaseUrl);
  const target = configured && realFile(configured);
  if (!target)
    return (
      io.err(
        `imgpress restore: ${notAFile(config.databaseUrl, "restore a pg_dump with pg_restore", "restore it with that server's tools")}`,
      ),
      1
    );
  const inUse = serverInUse(target);
  if (inUse !== null) return (io.err(`imgpress restore: ${inUse}`), 1);
  // The pid record may have been deleted by hand under a live server; its lock cannot be.
  if (await servingLockHeld(target)) return (io.err(`imgpress restore: ${serverHoldsLock(target)}`), 1);
  const unreadable = await whyNotAFile(resolve(file));
  if (unreadable) return (io.err(`imgpress restore: ${unreadable}`), 1);
  // Names no earlier restore used: a second one within the same second must not replace the first's kept copies.
  const suffix = await unclaimed(`.before-restore-${stamp()}`, (s) => [
    ...DATABASE_FILE_SUFFIXES.map((ext) => `${target}${s}${ext}`),
    `${masterKeyPath(config)}${s}`,
  ]);
  const stage = `${target}.restore-${crypto.randomUUID()}`;
  const newFolder = !(await isFolder(dirname(target)));
  await mkdir(dirname(target), { recursive: true, mode: 0o700 });
  if (newFolder)
    io.err(
      `note: ${dirname(target)} did not exist and was created; if your server uses another folder, set IMGPRESS_DATA_DIR (or --data-dir) to it`,
    );
  // Held until the new file is in place: a server starting meanwhile refuses instead of opening the file about to be moved aside.
  let release: () => void;
  try {
    release = claimPidFile(target, "restore");
  } catch (err) {
    return (io.err(`imgpress restore: ${(err as Error).message}`), 1);
  }
  // A signal ends the process through process.exit, past the finally below.
  process.once("exit", release);
  const signals = interruptible(io);
  signals.leaveNothing(DATABASE_FILE_SUFFIXES.map((ext) => `${stage}${ext}`));
  try {
    const finished = await finishInterruptedRestore(target);
    if (finished)
      io.err(
        `note: an earlier restore into ${target} had been interrupted and was finished first${finished.aside ? ` (the database before it kept as ${finished.aside})` : ""}`,
      );
    const report = await restoreStaged(config, file, target, stage, suffix, signals, io);
    printRestore(report, flags.json === "true", io);
    return 0;
  } finally {
    signals.release();
    process.off("exit", release);
    release();
  }
}

/** What a restore did, as `imgpress restore --json` prints it. */
interface RestoreReport {
  restored: string;
  into: string;
  takenAt: string | null;
  keyPairs: number;
  revokedKeyPairs: number;
  migrationsApplied: readonly string[];
  previousDatabase: string | null;
  previousMasterKey: string | null;
}

async function restoreStaged(
  config: Config,
  file: string,
  target: string,
  stage: string,
  suffix: string,
  signals: ReturnType<typeof interruptible>,
  io: Output,
): Promise<RestoreReport> {
  const info = await stageSnapshot(resolve(file), stage).catch((err: Error) => {
    throw new Error(`restore refused, nothing changed: ${err.message}`);
  });
  const keyFile = masterKeyPath(config);
  const keySwap = await keyToSwap(config, info, keyFile, suffix, io).catch(async (err) => {
    await removeDatabaseFiles(stage);
    throw err;
  });
  const owner = await ownerToKeep(target);
  // Moving the old key and database aside and the new ones in: a signal now waits, and what a
  // kill or a power cut interrupts the plan written first lets the next server start (or restore)
  // finish; otherwise the folder could be left without a database, or with the backup's key beside the old one.
  const plan: RestorePlan = {
    stage,
    suffix,
    keyFile,
    asideKey: keySwap?.asideKey ?? null,
    keyText: keySwap?.text ?? null,
  };
  const aside = await signals.uninterrupted(async () => {
    await writeRestorePlan(target, plan);
    try {
      const moved = await carryOutRestore(target, plan);
      signals.leaveNothing([]);
      return moved;
    } catch (err) {
      // The database stayed: so does its key.
      await undoRestore(target, plan);
      throw err;
    }
  });
  const store = await openStore(fileUrl(target));
  await store.shutdown();
  if (owner)
    for (const path of [...DATABASE_FILE_SUFFIXES.map((ext) => `${target}${ext}`), ...(keySwap ? [keyFile] : [])])
      await chown(path, owner.uid, owner.gid).catch(() => {});
  return {
    restored: resolve(file),
    into: target,
    takenAt: info.createdAt ? new Date(info.createdAt).toISOString() : null,
    keyPairs: info.keys.all,
    revokedKeyPairs: info.keys.revoked,
    migrationsApplied: store.migrationsApplied,
    previousDatabase: aside ?? null,
    previousMasterKey: keySwap?.asideKey ?? null,
  };
}

// The backup's key, when it replaces the folder's (written in the same uninterrupted step as the
// database), or null; throws when the backup's key and the folder's cannot both be right.
async function keyToSwap(
  config: Config,
  info: Awaited<ReturnType<typeof stageSnapshot>>,
  keyFile: string,
  suffix: string,
  io: Output,
): Promise<{ asideKey: string | null; text: string } | null> {
  const current = await existingMasterKey(config);
  if (info.masterKey && (await keyFitsDatabase(info.facts, info.masterKey)) === false) {
    throw new Error(
      "restore refused, nothing changed: the master key in this backup is not the one its database was created with (it was made with a wrong IMGPRESS_MASTER_KEY); restore a backup made with the right key",
    );
  }
  if (info.masterKey && config.masterKey && current && !sameKey(current, info.masterKey)) {
    throw new Error(
      "restore refused, nothing changed: IMGPRESS_MASTER_KEY differs from the master key in the backup; unset it or set it to the backup's key",
    );
  }
  if (info.masterKey && !config.masterKey && (!current || !sameKey(current, info.masterKey))) {
    return {
      asideKey: current ? `${keyFile}${suffix}` : null,
      text: `${Buffer.from(info.masterKey).toString("hex")}\n`,
    };
  }
  if (!info.masterKey) {
    const matches = current ? await keyFitsDatabase(info.facts, current) : null;
    if (matches === false) {
      throw new Error(
        `restore refused, nothing changed: the backup holds no master key and its database was created under another key than the current one (${masterKeyOrigin(config)}); put that key in place, then restore again`,
      );
    }
    if (matches === null && current)
      io.err(
        "warning: this backup holds no master key; the current one stays, and secrets sealed under another key cannot be opened",
      );
    if (matches === null && !current) {
      io.err(
        `warning: this backup holds no master key and this folder has none: before starting the server, put the key its database was created with in place (${masterKeyPath(config)} or IMGPRESS_MASTER_KEY)`,
      );
    }
  }
  return null;
}

function printRestore(report: RestoreReport, json: boolean, io: Output): void {
  if (json) {
    io.out(JSON.stringify(report));
    return;
  }
  // An older backup is brought up to this version: said as `imgpress migrate` says it.
  if (report.migrationsApplied.length > 0) io.out(migrateReport(report.migrationsApplied));
  if (report.previousMasterKey) io.out(`previous master key kept as ${report.previousMasterKey}`);
  if (report.previousDatabase) io.out(`previous database kept as ${report.previousDatabase}`);
  const taken = report.takenAt ? ` taken ${report.takenAt}` : "";
  const keys = describeKeyPairs({ all: report.keyPairs, revoked: report.revokedKeyPairs });
  io.out(`restored ${report.restored}${taken} into ${report.into} (${keys}; integrity check ok)`);
}

// Run by root (`sudo imgpress restore`), the new files would be root's, and a service running as its
// own user could not open them: they take the owner of what they replace (the old database, or its folder).
async function ownerToKeep(target: string): Promise<{ uid: number; gid: number } | null> {
  if (runningAs() !== 0) return null;
  const before = (await statOf(target)) ?? (await statOf(dirname(target)));
  return before && before.uid !== 0 ? { uid: before.uid, gid: before.gid } : null;
}

// Under Deno, reading the uid needs --allow-sys=uid, which deno.json does not grant: a process
// that may not ask is not treated as root (it could not hand files to another owner either).
function runningAs(): number | undefined {
  try {
    return process.getuid?.();
  } catch {
    return undefined;
  }
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

// Why `path` cannot be restored from, or null when it is a file: said as missing, not a file, or out
// of reach (a permission, or under Deno a path outside --allow-read).
async function whyNotAFile(path: string): Promise<string | null> {
  try {
    return (await stat(path)).isFile() ? null : `${path} is not a file`;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return `${path} does not exist`;
    return `cannot read ${path}: ${(err as Error).message}`;
  }
}

async function isFolder(path: string): Promise<boolean> {
  return (await statOf(path))?.isDirectory() ?? false;
}

async function isFile(path: string): Promise<boolean> {
  return (await statOf(path))?.isFile() ?? false;
}
