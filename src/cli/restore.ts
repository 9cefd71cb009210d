// `imgpress restore FILE`: a verified snapshot put in place of the database file, the old one kept aside.
import { Buffer } from "node:buffer";
import { chown, mkdir, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import type { Config } from "../core/config.ts";
import { realFile, statOf } from "../core/files.ts";
import {
  DATABASE_FILE_SUFFIXES,
  describeKeyPairs,
  removeDatabaseFiles,
  sameKey,
  stageSnapshot,
} from "../data/db/backup.ts";
import { fileUrl, localPath, openStore } from "../data/db/index.ts";
import {
  carryOutRestore,
  finishInterruptedRestore,
  type RestorePlan,
  undoRestore,
  writeRestorePlan,
} from "../data/db/restore-plan.ts";
import { existingMasterKey, keyFitsDatabase, masterKeyOrigin, masterKeyPath } from "../server/masterkey.ts";
import { claimPidFile, serverInUse } from "../server/pidfile.ts";
import { serverHoldsLock, servingLockHeld } from "../server/servinglock.ts";
import { UsageError } from "./args.ts";
import { isFolder, notAFile, type Output, stamp, unclaimed } from "./backup.ts";
import { migrateReport } from "./index.ts";
import { interruptible } from "./interrupt.ts";

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
